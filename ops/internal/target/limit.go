package target

// Limit is a resource limit's zero-value rule: zero means def, a negative
// value means none (0).
func Limit[T int64 | float64](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}
