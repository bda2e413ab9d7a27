package sshtest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// createUser makes a throwaway login user with a clean home under the
// system temporary directory and removes it (and its processes) at cleanup.
func (s *Server) createUser() {
	t := s.t
	if _, err := exec.LookPath("useradd"); err != nil {
		return // keep the current user
	}
	b := make([]byte, 4)
	rand.Read(b)
	name := "pisbx" + hex.EncodeToString(b)
	home := filepath.Join(os.TempDir(), name)
	var out []byte
	var err error
	for range 20 {
		// useradd locks /etc/passwd; parallel test packages may collide.
		out, err = exec.Command("useradd", "-m", "-p", "*", "-d", home, "-s", "/bin/bash", name).CombinedOutput()
		if err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("sshtest: useradd: %v: %s", err, out)
	}
	t.Cleanup(func() { removeUser(t, name) })
	s.User, s.Home, s.Dedicated = name, home, true
	s.authKeys = filepath.Join(home, ".ssh_authorized_keys")
}

func removeUser(t testing.TB, name string) {
	u, err := user.Lookup(name)
	if err != nil {
		return
	}
	uid, _ := strconv.Atoi(u.Uid)
	// Kill what the user still runs (only our test user's processes), by PID.
	for range 10 {
		pids := userPIDs(uid)
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for range 20 {
		out, err := exec.Command("userdel", "-r", "-f", name).CombinedOutput()
		if err == nil || strings.Contains(string(out), "does not exist") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	os.RemoveAll(u.HomeDir)
}

func userPIDs(uid int) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
				if f[1] == strconv.Itoa(uid) {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids
}

func chownUser(t testing.TB, path, name string) {
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
}

// TempDir returns a new directory the login user owns, removed at cleanup.
func (s *Server) TempDir(t testing.TB) string {
	t.Helper()
	if !s.Dedicated {
		return t.TempDir()
	}
	d, err := os.MkdirTemp(s.Home, "w-")
	if err != nil {
		t.Fatal(err)
	}
	chownUser(t, d, s.User)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}
