package shim

import (
	"os"
	"sync/atomic"
	"time"
)

// A sandbox's lifetime (`__shim keep`, keep_linux.go) and what the helper
// daemon tells it: the calls it serves.

// ActivityEnv names the environment variable that gives the helper daemon
// the file to touch at every client call (the container's environment
// sets it when the sandbox has an idle timeout).
const ActivityEnv = "PI_SANDBOX_ACTIVITY_FILE"

// KeepAliveMarker is in the command line of an ephemeral container's init
// (ops/docker's keep-alive script): `__shim serve --end-container` acts
// only there.
const KeepAliveMarker = "pi-sandbox-keepalive"

// LifetimeState is what `__shim keep --state` writes when the clocks start:
// the start (unix milliseconds) and the limits (milliseconds, 0: none). The
// idle timeout ends IdleMS after the later of the start and the activity
// file's modification time.
type LifetimeState struct {
	StartMS int64 `json:"start_ms"`
	TTLMS   int64 `json:"ttl_ms,omitempty"`
	IdleMS  int64 `json:"idle_ms,omitempty"`
}

// activity records the daemon's client calls in a file's modification
// time: at the start and end of every request, and every second while one
// runs (a running call is activity; background processes are not).
type activity struct {
	path    string
	running atomic.Int64
}

// newActivity returns the recorder of the file $ActivityEnv names, or nil.
func newActivity() *activity {
	p := os.Getenv(ActivityEnv)
	if p == "" {
		return nil
	}
	return &activity{path: p}
}

func (a *activity) begin() {
	if a != nil {
		a.running.Add(1)
		a.touch()
	}
}

func (a *activity) end() {
	if a != nil {
		a.running.Add(-1)
		a.touch()
	}
}

// run touches the file every second while a call runs, until done.
func (a *activity) run(done <-chan struct{}) {
	if a == nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if a.running.Load() > 0 {
				a.touch()
			}
		}
	}
}

func (a *activity) touch() {
	now := time.Now()
	if err := os.Chtimes(a.path, now, now); err != nil {
		if f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
			f.Close()
		}
	}
}
