package tools

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

// hangGuard runs fn and fails the test if it has not returned after a
// minute: the calls below used to block forever, and a hung
// test should say so rather than wait for the binary's timeout.
func hangGuard(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s did not return", what)
	}
}

// TestFileToolsRefuseSpecialFiles: read, edit, write and grep of a FIFO and
// of character devices (/dev/zero, /dev/urandom) on the local backend end with
// an error that says what the file is, instead of blocking forever.
func TestFileToolsRefuseSpecialFiles(t *testing.T) {
	e := newLocalEnv(t)
	fifo := filepath.Join(e.wd, "pipe")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	q := NewMutationQueue(e.b)
	info := e.b.Info()
	read, edit, write := NewRead(e.b, info), NewEdit(e.b, info, q), NewWrite(e.b, info, q)
	grep := NewGrep(e.b, info)
	ctx := context.Background()
	cases := []struct {
		tool      loop.Tool
		args      string
		want      string
		untouched string // a file that must keep its kind
	}{
		{read, `{"path":"pipe"}`, "Cannot read pipe: it is a named pipe, not a regular file. The read tool reads regular files only; use bash to read from a pipe or device (e.g. head -c 4096 pipe).", ""},
		{read, `{"path":"/dev/zero"}`, "Cannot read /dev/zero: it is a character device, not a regular file.", ""},
		{read, `{"path":"/dev/urandom","offset":2,"limit":3}`, "Cannot read /dev/urandom: it is a character device", ""},
		{edit, `{"path":"pipe","edits":[{"oldText":"a","newText":"b"}]}`, "Could not edit file: pipe. It is a named pipe, not a regular file; edit changes regular files only.", fifo},
		{grep, `{"pattern":"x","path":"pipe"}`, "Cannot search " + fifo + ": it is a named pipe, not a regular file or a directory. The grep tool searches files and directories only; use bash to read from a pipe or device.", fifo},
		{grep, `{"pattern":"x","path":"/dev/zero"}`, "Cannot search /dev/zero: it is a character device, not a regular file or a directory.", ""},
		{write, `{"path":"pipe","content":"x"}`, "Could not write pipe: it is a named pipe, not a regular file. The write tool replaces regular files only; use bash to write to a pipe or device.", fifo},
	}
	for _, c := range cases {
		var text, errText string
		hangGuard(t, c.tool.Name()+" "+c.args, func() { text, _, errText, _ = call(t, ctx, c.tool, c.args) })
		if !strings.HasPrefix(errText, c.want) {
			t.Errorf("%s %s: text %q, error %q; want an error starting %q", c.tool.Name(), c.args, trunc(text), errText, c.want)
		}
		if c.untouched != "" {
			if fi, err := os.Lstat(c.untouched); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
				t.Errorf("%s: %s is no longer a FIFO (%v, %v)", c.tool.Name(), c.untouched, fi, err)
			}
		}
	}
	// A directory keeps pi's texts.
	e.mkdir("d")
	if _, _, errText, _ := call(t, ctx, read, `{"path":"d"}`); errText != "EISDIR: illegal operation on a directory, read" {
		t.Errorf("read of a directory: %q", errText)
	}
	if _, _, errText, _ := call(t, ctx, edit, `{"path":"d","edits":[{"oldText":"a","newText":"b"}]}`); errText != "EISDIR: illegal operation on a directory, read" {
		t.Errorf("edit of a directory: %q", errText)
	}
}

// blockingOpenFS blocks Open until ctx is done, like a read that never
// ends; entered is closed when the first Open is under way.
type blockingOpenFS struct {
	*memfs.FS
	entered chan struct{}
}

func (f blockingOpenFS) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	close(f.entered)
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestEditReadEndsWithTheCall: edit's read of the file is bounded by the
// call's context (it used to run under context.WithoutCancel, so a read
// that never ended held the call and the file's queue forever).
func TestEditReadEndsWithTheCall(t *testing.T) {
	m := memfs.New()
	addFile(t, m, "/work/a.txt", "one\n")
	fsys := blockingOpenFS{FS: m, entered: make(chan struct{})}
	edit := NewEdit(fsys, m.Info(), NewMutationQueue(fsys))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-fsys.entered
		cancel()
	}()
	var err error
	hangGuard(t, "edit", func() {
		_, err = edit.Execute(ctx, "id", editArgs("a.txt", "one", "two"), nil)
	})
	if err == nil || err.Error() != "Operation aborted" {
		t.Errorf("edit: %v, want Operation aborted", err)
	}
	if got := contents(t, m, "/work/a.txt"); got != "one\n" {
		t.Errorf("file %q", got)
	}
}

var _ ops.FS = blockingOpenFS{}
