package tools

import (
	"context"
	"io/fs"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

func TestWriteGolden(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *testEnv) {
		e.put("old.txt", []byte("old"))
		e.put("ro.txt", []byte("ro"))
		e.chmod("ro.txt", 0o444)
		e.mkdir("dir")
		e.put("target.txt", []byte("t"))
		e.symlink("target.txt", "link.txt")
		e.put("file", []byte("f"))
		write := NewWrite(e.b, e.b.Info(), NewMutationQueue(e.b))
		read := NewRead(e.b, e.b.Info())
		ctx := context.Background()
		tests := []struct{ args, text, err, file, content string }{
			{`{"path":"new.txt","content":"hello"}`, "Successfully wrote to new.txt", "", "new.txt", "hello"},
			{`{"path":"old.txt","content":""}`, "Successfully wrote to old.txt", "", "old.txt", ""},
			{`{"path":"a/b/c.txt","content":"deep"}`, "Successfully wrote to a/b/c.txt", "", "a/b/c.txt", "deep"},
			{`{"path":"@crlf.txt","content":"\ufeffx\r\ny\r\n"}`, "Successfully wrote to @crlf.txt", "", "crlf.txt", "\ufeffx\r\ny\r\n"},
			{`{"path":"link.txt","content":"via link"}`, "Successfully wrote to link.txt", "", "target.txt", "via link"},
			{`{"path":"` + e.wd + `/abs.txt","content":"é"}`, "Successfully wrote to " + e.wd + "/abs.txt", "", "abs.txt", "é"},
			{`{"path":"dir","content":"x"}`, "", "EISDIR: illegal operation on a directory, open '" + e.wd + "/dir'", "", ""},
			{`{"path":"file/sub.txt","content":"x"}`, "", "EEXIST: file already exists, mkdir '" + e.wd + "/file'", "", ""},
			{`{"path":"file/a/sub.txt","content":"x"}`, "", "ENOTDIR: not a directory, mkdir '" + e.wd + "/file/a'", "", ""},
		}
		for _, tt := range tests {
			text, details, errText, _ := call(t, ctx, write, tt.args)
			if text != tt.text || errText != tt.err || details != "" {
				t.Errorf("write %s: %q %q %q", tt.args, text, errText, details)
			}
			if tt.file != "" {
				if got, _, _, _ := call(t, ctx, read, `{"path":"`+tt.file+`"}`); got != tt.content {
					t.Errorf("after write %s: %s holds %q", tt.args, tt.file, got)
				}
			}
		}
		if fi, err := e.b.Lstat(ctx, e.wd+"/link.txt"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("link replaced: %v %v", fi, err)
		}
		actx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, errText, _ := call(t, actx, write, `{"path":"aborted.txt","content":"x"}`); errText != "Operation aborted" {
			t.Errorf("aborted: %q", errText)
		}
		if ok, _ := ops.Exists(ctx, e.b, e.wd+"/aborted.txt"); ok {
			t.Errorf("aborted write landed")
		}
	})
}

func TestWriteEACCES(t *testing.T) {
	m := memfs.New()
	m.AddFile("/work/ro.txt", []byte("ro"), 0o444)
	write := NewWrite(m, m.Info(), NewMutationQueue(m))
	_, _, errText, _ := call(t, context.Background(), write, `{"path":"ro.txt","content":"x"}`)
	if errText != "EACCES: permission denied, open '/work/ro.txt'" {
		t.Errorf("got %q", errText)
	}
}

// An abort that arrives while the file is being written: the file is
// written, the call reports "Operation aborted" (pi's final check), and the
// next write to the file waits for the first to settle.
func TestWriteAbortDuringWrite(t *testing.T) {
	m := memfs.New()
	q := NewMutationQueue(m)
	write := NewWrite(m, m.Info(), q)
	ctx, cancel := context.WithCancel(context.Background())
	inWrite, release := make(chan struct{}), make(chan struct{})
	m.SetMockErr(func(op, name string) error {
		if op == "writefile" && name == "/work/f.txt" {
			select {
			case <-inWrite:
			default:
				close(inWrite)
				<-release
			}
		}
		return nil
	})
	errc := make(chan string, 1)
	go func() {
		_, _, errText, _ := call(t, ctx, write, `{"path":"f.txt","content":"first"}`)
		errc <- errText
	}()
	<-inWrite
	cancel()
	second := make(chan string, 1)
	before := q.registered()
	go func() {
		text, _, _, _ := call(t, context.Background(), write, `{"path":"f.txt","content":"second"}`)
		second <- text
	}()
	waitRegistered(t, q, before+1)
	select {
	case <-second:
		t.Fatal("second write finished while the first held the file")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if got := <-errc; got != "Operation aborted" {
		t.Errorf("first: %q", got)
	}
	if got := <-second; got != "Successfully wrote to f.txt" {
		t.Errorf("second: %q", got)
	}
	if b, _ := m.Contents("/work/f.txt"); string(b) != "second" {
		t.Errorf("content %q", b)
	}
}
