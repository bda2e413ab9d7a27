//go:build race

package local

// A race-enabled binary sleeps a second at exit (GORACE atexit_sleep_ms),
// which would add a second to every command run through a re-executed
// race-enabled test binary as the shim. Only race builds (tests) see this.
var shimEnvExtra = []string{"GORACE=atexit_sleep_ms=0"}
