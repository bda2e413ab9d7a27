// Package growstack grows a goroutine's stack at once, while it is still
// shallow.
//
// A goroutine starts with a small stack that the runtime doubles, copying
// it, each time a call needs more; a goroutine that runs a deep call chain
// once (an HTTP/2 handler decoding JSON, a tool call) pays two or three
// such copies, each of a stack already deep. Calling Grow first costs one
// copy of a nearly empty stack. In the helper's per-call goroutines this
// took a sixth of a local read's CPU.
package growstack
