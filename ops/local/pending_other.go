//go:build !linux

package local

// pending is not checked here: the idle timer alone decides.
func (p *pump) pending() bool { return false }
