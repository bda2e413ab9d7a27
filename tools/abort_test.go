package tools

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

// blockingReader blocks its first Read until release is closed.
type blockingReader struct {
	started chan<- struct{}
	release <-chan struct{}
}

func (r blockingReader) Read(p []byte) (int, error) {
	close(r.started)
	<-r.release
	return 0, io.EOF
}

func (blockingReader) Close() error { return nil }

// read and ls reject "Operation aborted" as soon as the call is aborted,
// without waiting for the backend's I/O (pi's abort contract).
func TestAbortDoesNotWaitForIO(t *testing.T) {
	m := memfs.New()
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	m.AddGenerated("/work/slow.txt", 10, func() io.ReadCloser { return blockingReader{started, release} })
	m.AddDir("/work/d", 0o755)
	m.AddFile("/work/d/x", nil, 0o644)

	lsStarted := make(chan struct{})
	m.SetMockErr(func(op, name string) error {
		if op == "stat" && name == "/work/d/x" {
			close(lsStarted)
			<-release
		}
		return nil
	})
	for _, c := range []struct {
		tool    string
		args    string
		started chan struct{}
	}{
		{"read", `{"path":"slow.txt"}`, started},
		{"ls", `{"path":"d"}`, lsStarted},
	} {
		tool := NewRead(m, m.Info())
		if c.tool == "ls" {
			tool = NewLs(m, m.Info())
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan string, 1)
		go func() {
			_, _, errText, _ := call(t, ctx, tool, c.args)
			done <- errText
		}()
		<-c.started
		cancel()
		select {
		case got := <-done:
			if got != "Operation aborted" {
				t.Errorf("%s: %q", c.tool, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s waited for blocked I/O after the abort", c.tool)
		}
	}
}
