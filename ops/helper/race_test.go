//go:build race

package helper_test

// A race-enabled binary sleeps a second at exit; the shim is this binary.
const shimEnvExtra = "GORACE=atexit_sleep_ms=0"
