//go:build linux

package beneath_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/beneath"
)

// A bind-mounted single file cannot be renamed onto (EBUSY): the write
// goes in place. The mount is made in a private mount namespace of one
// locked thread, which is thrown away afterwards; the Set is opened there,
// as the helper opens its roots in the target's namespace.
func TestWriteFileAtomicBindMountedFile(t *testing.T) {
	tr := newTree(t)
	src := tr.B + "/mounted-src.txt"
	if err := os.WriteFile(src, []byte("before\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	target := tr.W + "/mounted.txt"
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		skip string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			ch <- result{skip: "unshare(CLONE_NEWNS): " + err.Error()}
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			ch <- result{skip: "private mounts: " + err.Error()}
			return
		}
		if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
			ch <- result{skip: "bind mount: " + err.Error()}
			return
		}
		// Open here: fds opened outside the namespace would not see the mount.
		s, err := beneath.Open(tr.roots())
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer s.Close()
		ch <- result{err: s.WriteFileAtomic(target, strings.NewReader("after\n"), 0o600)}
	}()
	r := <-ch
	if r.skip != "" {
		testenv.SkipOrFail(t, "no bind mount in a private namespace: "+r.skip)
	}
	if r.err != nil {
		t.Fatalf("WriteFileAtomic on a bind-mounted file: %v", r.err)
	}
	if b, err := os.ReadFile(src); err != nil || string(b) != "after\n" {
		t.Errorf("the mounted file holds %q, %v; want the new content written in place", b, err)
	}
	if fi, err := os.Stat(src); err != nil || fi.Mode() != 0o640 {
		t.Errorf("mode %v, %v; want it kept", fi.Mode(), err)
	}
	if m, _ := filepath.Glob(tr.W + "/.*pi-tmp*"); len(m) != 0 {
		t.Errorf("left %v", m)
	}
}
