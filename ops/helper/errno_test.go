package helper_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
)

// TestEMFILEKeepsItsName: a helper out of file descriptors says so ("too
// many open files", EMFILE), in a confined view as in an unconfined one,
// not "i/o error".
func TestEMFILEKeepsItsName(t *testing.T) {
	b := open(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := b.(ops.Confiner).Confine(t.Context(), []ops.Root{{Path: dir}})
	if err != nil {
		t.Fatal(err)
	}
	pid := b.(*helper.Client).Hello().PID
	// The limit is set at the lowest free descriptor number, so no new one
	// can be opened; a descriptor the helper closes meanwhile (its runtime,
	// a stream) frees a slot below it, and then that open succeeds: the
	// limit is set again, a few times.
	var succeeded []string
	for range 5 {
		setNoFreeFD(t, pid)
		failed := 0
		for _, be := range []struct {
			name string
			ops.Backend
		}{{"unconfined", b}, {"confined", v}} {
			name := be.name
			r, err := be.Open(t.Context(), f)
			if err == nil {
				r.Close()
				succeeded = append(succeeded, name)
				break
			}
			if !strings.Contains(err.Error(), "too many open files") || !errors.Is(err, ops.EMFILE) {
				t.Errorf("%s: Open = %v, want too many open files (EMFILE)", name, err)
			}
			failed++
		}
		if failed == 2 {
			return
		}
	}
	t.Fatalf("the open succeeded past RLIMIT_NOFILE in every attempt (%v)", succeeded)
}

// setNoFreeFD sets pid's RLIMIT_NOFILE soft limit to its lowest free
// descriptor number.
func setNoFreeFD(t *testing.T, pid int) {
	t.Helper()
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	used := map[int]bool{}
	for _, e := range fds {
		n, _ := strconv.Atoi(e.Name())
		used[n] = true
	}
	free := 0
	for used[free] {
		free++
	}
	lim := unix.Rlimit{Cur: uint64(free), Max: uint64(len(fds)) + 64}
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &lim, nil); err != nil {
		t.Fatal(err)
	}
}
