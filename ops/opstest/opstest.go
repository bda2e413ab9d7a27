package opstest

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// caseFunc is one conformance case. It takes testing.TB so that the suite's
// own tests can run it on a recorder and check that it fails.
type caseFunc func(t testing.TB, ctx context.Context, b ops.Backend)

type testCase struct {
	name    string
	fn      caseFunc
	serial  bool          // not parallel (measures memory)
	timeout time.Duration // watchdog; zero means defaultTimeout
}

const defaultTimeout = 2 * time.Minute

// allCases lists the cases in the order they run.
func allCases() []testCase {
	var cs []testCase
	cs = append(cs, fsCases()...)
	cs = append(cs, writeCases()...)
	cs = append(cs, runCases()...)
	cs = append(cs, treeCases()...)
	cs = append(cs, searchCases()...)
	cs = append(cs, replaceCases()...)
	cs = append(cs, moreCases()...)
	return cs
}

// TestBackend runs the conformance suite, one subtest per case named for the
// behaviour ("Run/CancelKillsTree"), in parallel except the one that
// measures memory. newBackend is called once per subtest and must register
// the backend's Close with t.Cleanup. Each case's context is canceled by
// its watchdog (2 minutes, 5 for the large transfers).
func TestBackend(t *testing.T, newBackend func(t *testing.T) ops.Backend) {
	runSuite(t, allCases(), newBackend, Gaps{})
}

// TestFS runs the file part of the suite (the FS methods: errors, symbolic
// links, permissions, atomic and streaming writes), for a backend whose Run
// cannot run the target's shell, as [testing/fstest.TestFS] checks an fs.FS.
// The cases still set up fixtures through Run with the commands the package
// doc lists (ln -s, mkdir, chmod, echo > f, test -w ...), so such a backend
// must interpret those; a case whose fixture Run fails with
// ops.ErrUnsupported is skipped with the command.
func TestFS(t *testing.T, newBackend func(t *testing.T) ops.Backend) {
	var cs []testCase
	cs = append(cs, fsCases()...)
	cs = append(cs, writeCases()...)
	for _, tc := range cs {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t)
			ctx := watchdog(t, cmp.Or(tc.timeout, defaultTimeout))
			tc.fn(t, ctx, b)
		})
	}
}

var errWatchdog = errors.New("opstest: watchdog expired")

// watchdog returns a context canceled when limit passes. Then it reports the
// overrun with a goroutine dump — also when the case returns at once because
// its context ended, so a hang never passes silently; if the case still does
// not return (a backend ignoring its context), it panics with a second dump
// rather than hang until the test binary's -timeout.
func watchdog(t *testing.T, limit time.Duration) context.Context {
	ctx, cancel := context.WithTimeoutCause(context.Background(), limit, errWatchdog)
	done := make(chan struct{})
	var report sync.Once
	fail := func() {
		// Once: the goroutine and the cleanup may both get here; the second
		// waits for the first, so Errorf never runs after the test ended.
		report.Do(func() { t.Errorf("watchdog: not finished after %s; goroutines:\n%s", limit, goroutines()) })
	}
	t.Cleanup(func() {
		if errors.Is(context.Cause(ctx), errWatchdog) {
			fail()
		}
		close(done)
		cancel()
	})
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		select {
		case <-done:
			return
		default:
		}
		fail()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			panic(fmt.Sprintf("opstest: watchdog: %s hangs although its context was canceled 30s ago\n%s", t.Name(), goroutines()))
		}
	}()
	return ctx
}

func goroutines() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// scratch creates a fresh directory under the backend's WorkDir and removes
// it when the case ends.
func scratch(t testing.TB, ctx context.Context, b ops.Backend) string {
	t.Helper()
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	dir := path.Join(b.Info().WorkDir, "opstest-"+hex.EncodeToString(rnd[:]))
	if err := b.MkdirAll(ctx, dir, 0o755); err != nil {
		t.Fatalf("scratch: MkdirAll(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = b.Run(cctx, &ops.Cmd{Command: "chmod -R u+rwx " + shquote.Quote(dir) + " 2>/dev/null; rm -rf " + shquote.Quote(dir)})
	})
	return dir
}

// sh runs command in dir and fails the case unless it exits 0.
func sh(t testing.TB, ctx context.Context, b ops.Backend, dir, command string) string {
	t.Helper()
	var out bytes.Buffer
	if err := b.Run(ctx, &ops.Cmd{Dir: dir, Command: command, Output: &out}); err != nil {
		if errors.Is(err, ops.ErrUnsupported) {
			t.Skipf("the fixture needs Run(%q): %v", command, err)
		}
		t.Fatalf("Run(%q): %v; output %q", command, err, out.String())
	}
	return out.String()
}

// run runs command in dir and returns its output and error.
func run(ctx context.Context, b ops.Backend, dir, command string) (string, error) {
	var out bytes.Buffer
	err := b.Run(ctx, &ops.Cmd{Dir: dir, Command: command, Output: &out})
	return out.String(), err
}

// wantPathErr checks err is a *fs.PathError carrying code (and, for a
// non-empty name, naming that path).
func wantPathErr(t testing.TB, what string, err error, name string, code ops.Errno) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got nil error, want %s", what, code)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("%s: error %v (%T) is not a *fs.PathError", what, err, err)
	}
	if got := ops.ErrnoOf(err); got != code {
		t.Fatalf("%s: errno %q (error %v), want %s", what, got, err, code)
	}
	if name != "" && pe.Path != name {
		t.Errorf("%s: PathError.Path = %q, want %q", what, pe.Path, name)
	}
	sentinel := map[ops.Errno]error{ops.ENOENT: fs.ErrNotExist, ops.EEXIST: fs.ErrExist, ops.EACCES: fs.ErrPermission}[code]
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Errorf("%s: errors.Is(%v, %v) = false", what, err, sentinel)
	}
}

// readAll reads name through Open.
func readAll(t testing.TB, ctx context.Context, b ops.Backend, name string) []byte {
	t.Helper()
	data, err := ops.ReadFile(ctx, b, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return data
}

func writeFile(t testing.TB, ctx context.Context, b ops.Backend, name string, data string) {
	t.Helper()
	if err := b.WriteFile(ctx, name, []byte(data), 0o644); err != nil {
		t.Fatalf("WriteFile(%s): %v", name, err)
	}
}

// markSink collects output and closes ready once mark has appeared.
type markSink struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	mark  []byte
	ready chan struct{}
	once  sync.Once
}

func newMarkSink(mark string) *markSink {
	return &markSink{mark: []byte(mark), ready: make(chan struct{})}
}

func (s *markSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	if bytes.Contains(s.buf.Bytes(), s.mark) {
		s.once.Do(func() { close(s.ready) })
	}
	return len(p), nil
}

func (s *markSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func strconvItoa(i int) string { return strconv.Itoa(i) }
