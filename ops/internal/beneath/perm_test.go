//go:build linux

package beneath_test

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/beneath"
)

// asNobody runs fn on a locked thread whose credentials alone were dropped
// to 65534:65534 (a raw setresuid affects one thread); the thread is thrown
// away afterwards.
func asNobody(t *testing.T, fn func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root to run a thread as another user")
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, 65534, 65534, 65534); e != 0 {
			done <- e
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, 65534, 65534, 65534); e != 0 {
			done <- e
			return
		}
		fn()
		done <- nil
	}()
	if err := <-done; err != nil {
		testenv.SkipOrFail(t, "cannot drop a thread's credentials: "+err.Error())
	}
}

// A directory the user cannot write holding a file it can: the write goes
// in place (as pi's). A file it cannot write is EACCES, as open(2) says,
// and Access with the write bit agrees.
func TestWriteFileAtomicUnwritableDir(t *testing.T) {
	base, err := os.MkdirTemp("", "beneath-perm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(base+"/d", 0o755); os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	d := base + "/d"
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"open": 0o666, "closed": 0o644} {
		if err := os.WriteFile(d+"/"+name, []byte("old\n"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d+"/"+name, mode)
	}
	if err := os.Chmod(d, 0o555); err != nil {
		t.Fatal(err)
	}
	inoBefore := ino(t, d+"/open")
	s, err := beneath.Open([]beneath.Root{{Path: base}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var errOpen, errClosed, errAccess, errNew error
	asNobody(t, func() {
		errOpen = s.WriteFileAtomic(d+"/open", strings.NewReader("new\n"), 0o644)
		errClosed = s.WriteFileAtomic(d+"/closed", strings.NewReader("new\n"), 0o644)
		errAccess = s.Access(d+"/closed", 2)
		errNew = s.WriteFileAtomic(d+"/new", strings.NewReader("new\n"), 0o644)
	})
	if errOpen != nil {
		t.Errorf("writable file in an unwritable directory: %v", errOpen)
	}
	if b, _ := os.ReadFile(d + "/open"); string(b) != "new\n" || ino(t, d+"/open") != inoBefore {
		t.Errorf("not written in place: %q", b)
	}
	for what, err := range map[string]error{"write": errClosed, "access": errAccess, "new file": errNew} {
		if !errors.Is(err, syscall.EACCES) {
			t.Errorf("%s: %v, want EACCES", what, err)
		}
	}
	if b, _ := os.ReadFile(d + "/closed"); string(b) != "old\n" {
		t.Errorf("the unwritable file changed: %q", b)
	}
}
