package execops

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// resumeOps is Ops on the host whose next times read streams are cut after
// 100 KB; hook runs at each cut.
func resumeOps(t *testing.T, times int32, hook func()) (*Ops, *dropper) {
	if runtime.GOOS != "linux" {
		testenv.SkipOrFail(t, "execops on the host: needs Linux")
	}
	d := &dropper{after: 100 << 10, hook: hook}
	d.times.Store(times)
	o := New(Config{Exec: hostExec{drop: d}, Name: "hostexec"})
	o.SetTarget(Target{WorkDir: t.TempDir(), Shell: "/bin/sh", Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, RunDir: t.TempDir()})
	return o, d
}

func bigFile(t *testing.T) (string, []byte) {
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i * 7 / 5)
	}
	name := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return name, data
}

func readBack(o *Ops, name string) ([]byte, error) {
	r, err := o.Open(context.Background(), name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// TestOpenResumesCutStream: a read whose stream the transport dropped part
// way (twice) goes on where it stopped, and the reader gets the file whole.
func TestOpenResumesCutStream(t *testing.T) {
	o, d := resumeOps(t, 2, nil)
	name, data := bigFile(t)
	got, err := readBack(o, name)
	if err != nil {
		t.Fatalf("read after %d cuts: %v", d.cuts.Load(), err)
	}
	if d.cuts.Load() != 2 {
		t.Fatalf("%d cuts, want 2 (the test did not cut)", d.cuts.Load())
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, want the %d of the file, whole", len(got), len(data))
	}
}

// TestOpenNoResumeOfChangedFile: the file changes while the stream is down:
// the read fails with a transport error instead of joining two versions.
func TestOpenNoResumeOfChangedFile(t *testing.T) {
	var name string
	o, _ := resumeOps(t, 1, func() { os.WriteFile(name, []byte("another version, another size"), 0o644) })
	name, _ = bigFile(t)
	got, err := readBack(o, name)
	if !errors.Is(err, ops.ErrTransport) {
		t.Fatalf("read of a file changed under a cut = %d bytes, %v; want an ops.ErrTransport", len(got), err)
	}
}

// TestOpenResumesBounded: a stream cut every time fails after maxResumes
// resumptions.
func TestOpenResumesBounded(t *testing.T) {
	o, d := resumeOps(t, 100, nil)
	name, _ := bigFile(t)
	_, err := readBack(o, name)
	if !errors.Is(err, ops.ErrTransport) || d.cuts.Load() != maxResumes+1 {
		t.Fatalf("read = %v after %d cuts; want an ops.ErrTransport after %d", err, d.cuts.Load(), maxResumes+1)
	}
}
