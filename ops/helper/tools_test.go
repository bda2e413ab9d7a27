package helper_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/tools"
)

// toolText runs one tool call and returns its text (an error's message
// for an error result).
func toolText(t *testing.T, lp *loop.Loop, name, args string) string {
	t.Helper()
	b := lp.RunBatch(t.Context(), nil, []loop.ToolCall{{ID: "c", Name: name, Arguments: json.RawMessage(args)}}, nil)
	var sb strings.Builder
	for _, c := range b.Results[0].Result.Content {
		sb.WriteString(c.Text)
	}
	return sb.String()
}

// TestToolsOneRoundTrip: read, edit and ls on a confined helper view take
// their one-round-trip paths (ops.CheckedOpenFS, ops.ListFS) and answer as
// the steps one by one do: links followed or dropped, special files
// refused, errors as pi words them.
func TestToolsOneRoundTrip(t *testing.T) {
	b := open(t)
	dir := t.TempDir()
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\n"), 0o644))
	must(os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(os.Symlink("sub", filepath.Join(dir, "linkdir")))
	must(os.Symlink("a.txt", filepath.Join(dir, "linkfile")))
	must(os.Symlink("nowhere", filepath.Join(dir, "dangling")))
	must(os.Symlink(outside, filepath.Join(dir, "out")))
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		testenv.SkipOrFail(t, "mkfifo: "+err.Error())
	}
	v, err := b.(ops.Confiner).Confine(t.Context(), []ops.Root{{Path: dir}})
	must(err)
	if _, ok := v.(ops.ListFS); !ok {
		t.Fatal("the view has no ListDir")
	}
	info := v.Info()
	info.WorkDir = dir
	lp, err := loop.New([]loop.Tool{tools.NewRead(v, info), tools.NewLs(v, info), tools.NewEdit(v, info, tools.NewMutationQueue(v))})
	must(err)

	for _, c := range []struct{ tool, args, want string }{
		{"ls", `{}`, "a.txt\nfifo\nlinkdir/\nlinkfile\nsub/"},
		{"ls", `{"path":"a.txt"}`, "Not a directory: " + filepath.Join(dir, "a.txt")},
		{"ls", `{"path":"missing"}`, "Path not found: " + filepath.Join(dir, "missing")},
		{"read", `{"path":"linkfile"}`, "one\ntwo\n"},
		{"read", `{"path":"fifo"}`, "Cannot read fifo: it is a named pipe"},
		{"read", `{"path":"sub"}`, "EISDIR: illegal operation on a directory, read"},
		{"read", `{"path":"missing"}`, "ENOENT: no such file or directory, access '" + filepath.Join(dir, "missing") + "'"},
		{"edit", `{"path":"a.txt","edits":[{"oldText":"two","newText":"three"}]}`, "Successfully replaced 1 block(s) in a.txt."},
		{"read", `{"path":"a.txt"}`, "one\nthree\n"},
		{"edit", `{"path":"fifo","edits":[{"oldText":"x","newText":"y"}]}`, "Could not edit file: fifo. It is a named pipe"},
	} {
		if got := toolText(t, lp, c.tool, c.args); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %s = %q, want %q…", c.tool, c.args, got, c.want)
		}
	}
	// A link out of the roots is not read.
	if got := toolText(t, lp, "read", `{"path":"out/secret"}`); strings.HasPrefix(got, "s") {
		t.Errorf("read out/secret = %q", got)
	}
}
