package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// TestMain lets the test binary play the shim: "<bin> __shim grep JSON".
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "__shim" {
		switch os.Args[2] {
		case "grep":
			os.Exit(ShimGrep(os.Args[3:], os.Stdin, os.Stdout))
		case "find":
			os.Exit(ShimFind(os.Args[3:], os.Stdin, os.Stdout))
		}
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// shRunner is a minimal local ops.Runner for the runner tests.
type shRunner struct{}

func (shRunner) Run(ctx context.Context, c *ops.Cmd) error {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", c.Command)
	cmd.Dir = c.Dir
	var out bytes.Buffer
	w := c.Output
	if w == nil {
		w = &out
	}
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	if ctx.Err() != nil {
		return ops.Canceled(ctx)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &ops.ExitError{Code: 128 + int(ws.Signal()), Signal: int(ws.Signal())}
		}
		return &ops.ExitError{Code: ee.ExitCode()}
	}
	return err
}

// mkTree writes files (a name ending in "/" is a directory) under a new
// temporary directory and returns it.
func mkTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func fmtEvent(ev ops.GrepEvent) string {
	sep := "-"
	if ev.Match {
		sep = ":"
	}
	return fmt.Sprintf("%s%s%d%s %s", ev.Path, sep, ev.Line, sep, ev.Text)
}

type grepFunc func(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error

func collectGrep(t *testing.T, g grepFunc, q ops.GrepQuery) ([]string, error) {
	t.Helper()
	var out []string
	err := g(context.Background(), &q, func(ev ops.GrepEvent) error {
		out = append(out, fmtEvent(ev))
		return nil
	})
	return out, err
}

func engineGrep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	return GrepFS(ctx, osFS{}, q, fn)
}

func rgGrep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	return GrepWithRG(ctx, shRunner{}, q, fn)
}

type findFunc func(ctx context.Context, q *ops.FindQuery, fn func(string) error) error

func collectFind(t *testing.T, f findFunc, q ops.FindQuery) ([]string, error) {
	t.Helper()
	var out []string
	err := f(context.Background(), &q, func(rel string) error {
		out = append(out, rel)
		return nil
	})
	return out, err
}

func engineFind(ctx context.Context, q *ops.FindQuery, fn func(string) error) error {
	return FindFS(ctx, osFS{}, q, fn)
}

func fdFind(ctx context.Context, q *ops.FindQuery, fn func(string) error) error {
	return FindWithFD(ctx, shRunner{}, q, fn)
}

// needTool skips (or fails under CI=true) when a command is missing.
func needTool(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err == nil {
			return
		}
	}
	testenv.SkipOrFail(t, names[0]+" not installed (apt-get install ripgrep fd-find)")
}

// sortedByFile orders events by path, then line: ripgrep's order across
// files is not stable.
func sortedByFile(lines []string) []string {
	s := append([]string(nil), lines...)
	sort.SliceStable(s, func(i, j int) bool {
		pi, li := splitEvent(s[i])
		pj, lj := splitEvent(s[j])
		if pi != pj {
			return pi < pj
		}
		return li < lj
	})
	return s
}

func splitEvent(s string) (string, int) {
	i := strings.IndexAny(s, ":-")
	for i >= 0 {
		var n int
		if _, err := fmt.Sscanf(s[i+1:], "%d", &n); err == nil {
			return s[:i], n
		}
		j := strings.IndexAny(s[i+1:], ":-")
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return s, 0
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
