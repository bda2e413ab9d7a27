//go:build !linux

package native

// pending is not checked here: the idle timer alone decides.
func (p *pump) pending() bool { return false }
