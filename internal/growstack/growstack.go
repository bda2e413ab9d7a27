package growstack

// Grow makes the calling goroutine's stack at least 32 KiB.
//
//go:noinline
func Grow() {
	var buf [16 << 10]byte
	use(buf[:])
}

//go:noinline
func use(b []byte) {
	if len(b) == 0 {
		panic("growstack: empty")
	}
}
