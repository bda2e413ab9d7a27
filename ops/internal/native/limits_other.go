//go:build !linux

package native

// Limits are not compared here: no process is replaced for its limits.
type Limits struct{}

// OwnLimits reads nothing here.
func OwnLimits() Limits { return Limits{} }

// ProcessLimits reads nothing here.
func ProcessLimits(pid int) Limits { return Limits{} }

// Changed is always "" here.
func (l Limits) Changed(now Limits) string { return "" }

func (l Limits) changed(now Limits, softFiles bool) string { return "" }
