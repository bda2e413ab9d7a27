package k8s

import (
	"context"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
)

// helperArgv is the command of the helper's exec. In an `up` pod it is the
// relay to the pod's long-lived helper daemon (which owns background
// processes until down; a lost client loses only its calls in flight).
// Otherwise it ends this backend's previous helper first — after a cut
// stream that one still runs, with every command it started — and starts
// a helper of this backend's own.
func (b *Backend) helperArgv() []string {
	if b.up {
		return append([]string{b.shimPath}, helper.RelayArgs(b.upDir(), b.helperKey)...)
	}
	return []string{"/bin/sh", "-c",
		`"$1" __shim kill --wait 4s "$2" >/dev/null 2>&1; exec "$1" __shim serve --pidfile "$2" --lease "$3"`,
		"sh", b.shimPath, b.pidfile, b.lease.String()}
}

// dialHelper starts the helper in one exec and returns its stdio.
func (b *Backend) dialHelper(ctx context.Context) (io.ReadWriteCloser, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	st := helper.NewTailBuffer(4 << 10)
	// The exec lives as long as the stream, not as the dial's ctx.
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &execStream{in: inW, out: outR, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		code, err := b.t.exec(ectx, b.helperArgv(), inR, outW, st)
		if err == nil {
			err = io.EOF
			if msg := strings.TrimSpace(st.String()); msg != "" || code != 0 {
				err = fmt.Errorf("k8s: helper exited (status %d): %s: %w", code, msg, io.EOF)
			}
			// A pod that was deleted under the helper ends its exec with
			// 137: say so.
			if gone := b.podGone(); gone != "" {
				err = fmt.Errorf("k8s: pod %s %s: %w: %w", b.t.pod, gone, ops.ErrTransport, err)
			}
		}
		inR.CloseWithError(err)
		outW.CloseWithError(err)
	}()
	if b.up && b.helperKey != "" {
		// The relay accepts only a daemon proving the pod's key, which it
		// gets only when no process of the pod's user could ever read it
		// (a failed exec ends the handshake: the goroutine above closes
		// the pipes).
		if _, err := helper.RelayHello(ctx, s, b.helperKey); err != nil {
			return nil, fmt.Errorf("k8s: %w", err)
		}
	}
	return s, nil
}

// podGone says how the pod is gone or going ("" when it is running).
func (b *Backend) podGone() string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	p, err := b.c.api.getPod(ctx, b.t.pod)
	switch {
	case err != nil && isNotFound(err):
		return "was deleted"
	case err != nil:
		return ""
	case p.DeletionTimestamp != nil:
		return "is being deleted"
	case p.Status.Phase != "Running":
		return "is " + podState(p)
	}
	return ""
}

// restoreHelper uploads the shim again when a helper would not start or
// answer (the binary was removed or replaced, the directories are gone).
func (b *Backend) restoreHelper(ctx context.Context) error {
	res, err := b.t.script(ctx, `mkdir -p "$1/spill" "$1/run"`, nil, b.stateDir)
	if err != nil {
		return err
	}
	if res.code != 0 {
		return fmt.Errorf("k8s: restore the sandbox directories: %s", strings.TrimSpace(string(res.stderr)))
	}
	dir := b.shimPath[:strings.LastIndexByte(b.shimPath, '/')]
	p, err := b.uploadShim(ctx, dir)
	if err != nil {
		return err
	}
	b.shimPath = p
	return nil
}

// execStream is the helper exec's stdio.
type execStream struct {
	in     *io.PipeWriter
	out    *io.PipeReader
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func (s *execStream) Read(p []byte) (int, error)  { return s.out.Read(p) }
func (s *execStream) Write(p []byte) (int, error) { return s.in.Write(p) }

// Close half-closes the helper's stdin (it then kills every command and
// exits, and the exec ends); the exec is cut after a few seconds if it has
// not ended by then.
func (s *execStream) Close() error {
	s.once.Do(func() {
		s.in.Close()
		s.out.Close()
		go func() {
			select {
			case <-s.done:
			case <-time.After(5 * time.Second):
			}
			s.cancel()
		}()
	})
	return nil
}

// upDir is the directory of an up pod's helper daemon (its socket, lock
// and log): next to the sandboxes' keyed directories, the user's own.
func (b *Backend) upDir() string {
	return path.Dir(b.stateDir) + "/up-helper-" + strconv.Itoa(b.info.UID)
}
