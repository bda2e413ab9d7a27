package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// start runs bin detached (its own session, stdin /dev/null, output to the log file),
// records "PID EXE" in the PID file and returns the PID.
func start(l layout, name, bin string, env []string, args ...string) (int, error) {
	os.MkdirAll(filepath.Dir(l.logFile(name)), 0o755)
	os.MkdirAll(filepath.Dir(l.pidFile(name)), 0o755)
	logFile, err := os.OpenFile(l.logFile(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("cluster: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = l.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("cluster: starting %s: %w", name, err)
	}
	pid := cmd.Process.Pid
	cmd.Process.Release()
	rec := fmt.Sprintf("%d %s\n", pid, bin)
	if err := os.WriteFile(l.pidFile(name), []byte(rec), 0o644); err != nil {
		syscall.Kill(pid, syscall.SIGKILL)
		return 0, fmt.Errorf("cluster: %w", err)
	}
	return pid, nil
}

// recorded returns the PID of a component started by start if it is still that process
// (alive, not a zombie, same executable), else 0.
func recorded(l layout, name string) int {
	b, err := os.ReadFile(l.pidFile(name))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || !isProcess(pid, f[1]) {
		return 0
	}
	return pid
}

// isProcess reports whether pid is a live (non-zombie) process running exe.
func isProcess(pid int, exe string) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
		return false
	}
	got, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && strings.TrimSuffix(got, " (deleted)") == exe
}

func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs; it returns once pid is gone.
func stop(pid int, grace time.Duration) {
	syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(time.Hour)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFor polls ready until it returns nil, the component dies (its log tail is in the
// error) or the timeout passes.
func waitFor(l layout, name string, pid int, timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if pid != 0 && !alive(pid) {
			return fmt.Errorf("cluster: %s exited during start-up; its log %s ends:\n%s", name, l.logFile(name), logTail(l.logFile(name)))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: %s not ready after %s (%v); its log %s ends:\n%s", name, timeout, err, l.logFile(name), logTail(l.logFile(name)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func logTail(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}

var errNotYet = errors.New("not yet")
