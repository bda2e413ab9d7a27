package tools

import (
	"context"
	"encoding/json"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

// testEnv is a backend plus the means to build fixtures in its working
// directory; the same golden tests run on every backend in testBackends.
type testEnv struct {
	b       ops.Backend
	wd      string
	put     func(rel string, data []byte)
	mkdir   func(rel string)
	symlink func(target, rel string)
	chmod   func(rel string, perm fs.FileMode)
}

// testBackends lists the backends the golden tests run on; backend files
// (local_env_test.go) add theirs in init.
var testBackends = []backendCase{{"memfs", newMemEnv}}

type backendCase struct {
	name string
	new  func(t *testing.T) *testEnv
}

func newMemEnv(t *testing.T) *testEnv {
	m := memfs.New()
	wd := m.Info().WorkDir
	must := func(err error) {
		if err != nil {
			t.Helper()
			t.Fatal(err)
		}
	}
	return &testEnv{
		b:       m,
		wd:      wd,
		put:     func(rel string, data []byte) { must(m.AddFile(path.Join(wd, rel), data, 0o644)) },
		mkdir:   func(rel string) { must(m.AddDir(path.Join(wd, rel), 0o755)) },
		symlink: func(target, rel string) { must(m.AddSymlink(target, path.Join(wd, rel))) },
		chmod:   func(rel string, perm fs.FileMode) { must(m.Chmod(path.Join(wd, rel), perm)) },
	}
}

func forEachBackend(t *testing.T, fn func(t *testing.T, e *testEnv)) {
	for _, tb := range testBackends {
		t.Run(tb.name, func(t *testing.T) { fn(t, tb.new(t)) })
	}
}

// call runs tool with JSON arguments and returns the first text block, the
// details as JSON ("" when absent) and the error text ("" when none).
func call(t *testing.T, ctx context.Context, tool loop.Tool, argsJSON string) (text, details, errText string, res *loop.Result) {
	t.Helper()
	var args map[string]any
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		t.Fatal(err)
	}
	res, err := tool.Execute(ctx, "id", args, nil)
	if err != nil {
		return "", "", err.Error(), nil
	}
	if len(res.Content) > 0 {
		text = res.Content[0].Text
	}
	if res.Details != nil {
		b, err := loop.MarshalNoEscape(res.Details)
		if err != nil {
			t.Fatal(err)
		}
		details = string(b)
	}
	return text, details, "", res
}

func lines(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte('\n')
		}
		b.WriteString(prefix)
		b.WriteString(itoa(i))
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }
