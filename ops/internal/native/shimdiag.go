package native

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// shellExit is the shim's report that the shell exited.
type shellExit struct {
	code    int
	at      time.Time
	runtime time.Duration
}

// shimDone is the shim's last status line: the tree is gone, the output
// drained, and the shim's exit follows with this status.
type shimDone struct {
	code, signal int
}

// err is the call's result for the status.
func (d shimDone) err() error { return statusError(d.code, d.signal) }

// shimDiag reads the shim's stderr: its status lines (see package shim).
type shimDiag struct {
	r, w     *os.File
	exits    chan shellExit
	ends     chan shimDone
	detached chan struct{} // closed when the shim detached
	refused  atomic.Bool   // the shim killed leftovers: the background limit
	reusable atomic.Bool   // a pooled shim waits for its next run (warm.go)
	group    atomic.Int64  // a pooled shim's command: its process group
	done     chan struct{}
	startErr error  // set before done is closed
	limits   string // a pooled shim's "limits changed" report; set before done is closed
}

func newShimDiag() (*shimDiag, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &shimDiag{r: r, w: w, exits: make(chan shellExit, 1), ends: make(chan shimDone, 1), detached: make(chan struct{}), done: make(chan struct{})}, nil
}

// started closes the parent's write end and starts reading.
func (d *shimDiag) started() {
	d.w.Close()
	go d.read()
}

func (d *shimDiag) read() {
	defer close(d.done)
	defer d.r.Close()
	sc := bufio.NewScanner(d.r)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "pi-sandbox-shim: ")
		if !ok {
			continue
		}
		if v, ok := strings.CutPrefix(line, "exited "); ok {
			if code, err := strconv.Atoi(v); err == nil {
				select {
				case d.exits <- shellExit{code: code, at: time.Now()}:
				default:
				}
			}
			continue
		}
		if v, ok := strings.CutPrefix(line, "done "); ok {
			kind, n, _ := strings.Cut(v, " ")
			if code, err := strconv.Atoi(n); err == nil && (kind == "exit" || kind == "signal") {
				e := shimDone{code: code}
				if kind == "signal" {
					e = shimDone{signal: code}
				}
				select {
				case d.ends <- e:
				default:
				}
			}
			continue
		}
		if strings.HasPrefix(line, "detached ") {
			close(d.detached)
			continue
		}
		if line == "detach refused" {
			d.refused.Store(true)
			continue
		}
		if v, ok := strings.CutPrefix(line, "started "); ok {
			if pid, err := strconv.Atoi(v); err == nil && pid > 0 {
				d.group.Store(int64(pid))
			}
			continue
		}
		if v, ok := strings.CutPrefix(line, "limits changed "); ok {
			d.limits = v
			continue
		}
		if line == "reusable" {
			d.reusable.Store(true)
			continue
		}
		// "start: OP PATH: CODE"
		if v, ok := strings.CutPrefix(line, "start: "); ok {
			if i, j := strings.IndexByte(v, ' '), strings.LastIndex(v, ": "); i > 0 && j > i {
				d.startErr = ops.PathError(v[:i], v[i+1:j], ops.Errno(v[j+2:]))
			}
		}
	}
}

// wait waits until the shim's stderr is closed (the shim has exited).
func (d *shimDiag) wait() {
	select {
	case <-d.done:
	case <-time.After(drainWait):
		d.r.Close()
		<-d.done
	}
}
