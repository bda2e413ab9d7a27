// Package loop is the tool-call pipeline and the agent loop of pi 1.6:
// argument preparation, JSON-Schema validation with pi's coercions and texts,
// before/after hooks as middleware, parallel and sequential batches, events,
// and results in source order. It knows tools only through [Tool] and knows
// nothing of backends.
package loop
