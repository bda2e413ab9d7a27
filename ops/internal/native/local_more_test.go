package native_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
)

// TestConformanceNoShim runs the suite with the plain group kill (the setsid
// cases skip, with the reason).
func TestConformanceNoShim(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the suite already ran with the shim")
	}
	opstest.TestBackend(t, newBackend(native.Config{NoShim: true}))
}

func open(t *testing.T, cfg native.Config) *native.Backend {
	t.Helper()
	if cfg.WorkDir == "" {
		cfg.WorkDir = t.TempDir()
	}
	b, err := native.New(t.Context(), withShim(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestInfoShimAndLimits(t *testing.T) {
	b := open(t, native.Config{Background: true})
	if i := b.Info(); !i.Has("shim") || !i.Has("background") || len(i.Limits) != 0 || i.Backend != "local" {
		t.Errorf("with the shim: %+v", i)
	}
	b = open(t, native.Config{NoShim: true, Background: true})
	if i := b.Info(); i.Has("shim") || i.Has("background") || len(i.Limits) != 2 || !strings.Contains(i.Limits[0], "setsid") || !strings.Contains(i.Limits[1], "die when it ends") {
		t.Errorf("without the shim: %+v", i)
	}
}

func TestCloseRemovesSpillDirTwice(t *testing.T) {
	b, err := native.New(t.Context(), withShim(native.Config{WorkDir: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	spill := b.Info().SpillDir
	if fi, err := os.Stat(spill); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("spill dir: %v, %v; want a private directory", fi, err)
	}
	if err := os.WriteFile(filepath.Join(spill, "x"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(spill); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("spill dir still there: %v", err)
	}
	given := t.TempDir()
	b, err = native.New(t.Context(), withShim(native.Config{WorkDir: t.TempDir(), SpillDir: given}))
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, err := os.Stat(given); err != nil {
		t.Fatalf("Close removed a spill dir it did not create: %v", err)
	}
}

func TestNewRejectsBadWorkDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	for _, wd := range []string{filepath.Join(dir, "missing"), file} {
		if b, err := native.New(t.Context(), withShim(native.Config{WorkDir: wd})); err == nil {
			b.Close()
			t.Errorf("New(%s) succeeded", wd)
		}
	}
}

func TestErrorOps(t *testing.T) {
	b := open(t, native.Config{})
	ctx := t.Context()
	missing := b.Info().WorkDir + "/missing"
	for op, err := range map[string]error{
		"open":     func() error { _, err := b.Open(ctx, missing); return err }(),
		"stat":     func() error { _, err := b.Stat(ctx, missing); return err }(),
		"lstat":    func() error { _, err := b.Lstat(ctx, missing); return err }(),
		"scandir":  func() error { _, err := b.ReadDir(ctx, missing); return err }(),
		"access":   b.Access(ctx, missing, ops.AccessRead),
		"unlink":   b.Remove(ctx, missing),
		"realpath": func() error { _, err := b.RealPath(ctx, missing+"/x"); return err }(),
	} {
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Op != op || ops.ErrnoOf(err) != ops.ENOENT {
			t.Errorf("%s: %#v", op, err)
		}
		if want := "ENOENT"; ops.ErrnoOf(err).Code() != want {
			t.Errorf("%s: code %q", op, ops.ErrnoOf(err).Code())
		}
	}
}

func TestMissingShellIsStartError(t *testing.T) {
	for _, cfg := range []native.Config{{Shell: "/nonexistent/sh", NoShim: true}, {Shell: "/nonexistent/sh"}} {
		b := open(t, cfg)
		err := b.Run(t.Context(), &ops.Cmd{Command: "true"})
		var se *ops.StartError
		var pe *fs.PathError
		if !errors.As(err, &se) || !errors.As(err, &pe) || ops.ErrnoOf(err) != ops.ENOENT {
			t.Errorf("shim %v: Run with a missing shell = %v (%T), want a StartError (ENOENT)", b.Info().Has("shim"), err, err)
		}
	}
}

type failingSink struct{ n int }

func (s *failingSink) Write(p []byte) (int, error) {
	s.n++
	return 0, errors.New("sink full")
}

func TestSinkErrorStopsCommand(t *testing.T) {
	b := open(t, native.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 30e9)
	defer cancel()
	s := &failingSink{}
	err := b.Run(ctx, &ops.Cmd{Command: "while :; do echo x; done", Output: s})
	if err == nil || !strings.Contains(err.Error(), "sink full") || ctx.Err() != nil {
		t.Fatalf("Run = %v (ctx %v), want the sink's error promptly", err, ctx.Err())
	}
	if s.n != 1 {
		t.Errorf("sink written %d times after failing, want 1", s.n)
	}
}

func TestWriteFileInPlaceWhenDirReadOnly(t *testing.T) {
	b := open(t, native.Config{})
	dir := filepath.Join(b.Info().WorkDir, "ro")
	os.Mkdir(dir, 0o755)
	name := filepath.Join(dir, "f")
	os.WriteFile(name, []byte("old"), 0o644)
	os.Chmod(dir, 0o555)
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	if err := b.WriteFile(t.Context(), name, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(name); !bytes.Equal(got, []byte("new")) {
		t.Fatalf("content %q", got)
	}
	es, _ := os.ReadDir(dir)
	if len(es) != 1 {
		t.Fatalf("directory holds %d entries", len(es))
	}
}

// TestNoGoroutineLeak runs every kind of ending and checks that Run leaves
// no goroutine behind.
func TestNoGoroutineLeak(t *testing.T) {
	for _, cfg := range []native.Config{{}, {NoShim: true}} {
		b := open(t, cfg)
		base := runtime.NumGoroutine()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		b.Run(ctx, &ops.Cmd{Command: "true"})
		b.Run(t.Context(), &ops.Cmd{Command: "exit 3"})
		b.Run(t.Context(), &ops.Cmd{Command: "sleep 300 & echo x", Output: io.Discard})
		b.Run(t.Context(), &ops.Cmd{Command: "sleep 300", Timeout: 50 * time.Millisecond})
		b.Run(t.Context(), &ops.Cmd{Command: "true", Dir: "/nonexistent"})
		b.Run(t.Context(), &ops.Cmd{Command: "yes", Output: &failingSink{}})
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Fatalf("goroutines: %d before, %d after\n%s", base, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestShimBinaryGoneRunsPlainly(t *testing.T) {
	b := open(t, native.Config{ShimPath: "/nonexistent/pi-sandbox"})
	var out bytes.Buffer
	if err := b.Run(t.Context(), &ops.Cmd{Command: "echo ok", Output: &out}); err != nil || out.String() != "ok\n" {
		t.Fatalf("Run = %q, %v", out.String(), err)
	}
	err := b.Run(t.Context(), &ops.Cmd{Command: "true", Dir: "/nonexistent"})
	var se *ops.StartError
	if !errors.As(err, &se) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing Dir = %v, want a StartError", err)
	}
}
