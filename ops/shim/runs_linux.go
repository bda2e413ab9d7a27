package shim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
)

// A pooled shim (`__shim run --runs FD`) is started before its first
// command is known and serves one run after another: a backend that runs
// many commands (the helper) keeps it, so a command pays neither the start
// of a Go program nor its exit (an exec, the runtime's start, page faults,
// threads, the teardown: about 9 ms of CPU a command in a container on a
// small VM, against 2.5 ms for bash itself).
//
// FD is a unix stream socket. Each run is one message from the backend: a
// 4-byte big-endian length with two file descriptors attached (SCM_RIGHTS)
// — the run's output (what `__shim run` writes to its stdout) and its
// status lines (its stderr) — then that many bytes of spec: NUL-terminated
// strings, the number of ARGS, the ARGS (as in `__shim run ARGS...`), then
// the environment's entries. The shim takes the spec's environment as its
// own (what the command inherits, and the PATH a bare program name is
// looked up in), runs, and ends the run as `__shim run` ends: the "done"
// line, then both files closed. When the command exited normally and left
// nothing behind (no process, no holder of its output), "reusable" comes
// just before "done" and the shim waits for the next run; otherwise it
// exits after the run as `__shim run` would (after a detach, once the tree
// it owns is gone). A run whose command changed the shim's resource limits
// (which every later command would inherit) is not reusable either: the
// line "limits changed WHAT" comes before "done", and the shim exits. End of input on FD, or a kill request (SIGTERM,
// SIGINT, SIGHUP) between runs, ends it with status 0.
//
// The writer is package ops/internal/native (warm.go), which cannot import
// this package.

// maxSpec bounds a spec (commands over 96 KiB go through a file).
const maxSpec = 64 << 20

// runMsg is one run as the backend sent it.
type runMsg struct {
	args      []string
	env       []string
	out, diag *os.File
}

func serveRuns(ps *procState, fdArg string) int {
	fd, err := strconv.Atoi(fdArg)
	if err != nil || fd < 0 {
		return 2
	}
	// This process starts command after command of the sandbox's user: one
	// of them must not trace it, or read its memory, to reach the next.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	unix.CloseOnExec(fd)
	// The limits every command of this shim inherits: a run whose command
	// changed them (prlimit on its parent) ends the shim.
	limits := native.OwnLimits()
	sock := os.NewFile(uintptr(fd), "runs")
	runs := make(chan runMsg)
	go func() {
		defer close(runs)
		for {
			m, err := recvRun(sock)
			if err != nil {
				return
			}
			runs <- m
		}
	}()
	for {
		// What the next run needs and does not depend on comes first.
		pr, pw, perr := commandPipe()
		var m runMsg
		select {
		case mm, ok := <-runs:
			if !ok {
				return 0
			}
			m = mm
		case <-ps.sigs:
			return 0
		}
		if perr != nil {
			fmt.Fprintf(m.diag, "pi-sandbox-shim: start: pipe: %s\n", errnoName(perr, syscall.EIO))
			return startFailed
		}
		os.Clearenv()
		for _, kv := range m.env {
			k, v, ok := bytes.Cut([]byte(kv), []byte{'='})
			if ok && len(k) > 0 {
				_ = syscall.Setenv(string(k), string(v))
			}
		}
		closeCall := func() {
			m.out.Close()
			m.diag.Close()
		}
		r := runOnce(ps, m.args, runIO{out: m.out, diag: m.diag, pr: pr, pw: pw, closeCall: closeCall, ownGroup: true})
		if r.detached || r.early {
			return r.code
		}
		if r.clean {
			if changed := limits.Changed(native.OwnLimits()); changed != "" {
				fmt.Fprintf(m.diag, "pi-sandbox-shim: limits changed %s\n", changed)
				r.clean = false
			}
		}
		if r.clean {
			fmt.Fprintln(m.diag, "pi-sandbox-shim: reusable")
		}
		sayDone(m.diag, r.status)
		closeCall()
		if r.clean {
			continue
		}
		if r.status.Signaled() {
			raise(r.status.Signal())
		}
		return r.code
	}
}

// recvRun reads one run from sock.
func recvRun(sock *os.File) (runMsg, error) {
	var hdr [4]byte
	oob := make([]byte, unix.CmsgSpace(2*4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), hdr[:], oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return runMsg{}, err
	}
	if n == 0 {
		return runMsg{}, io.EOF
	}
	var fds []int
	if cms, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, cm := range cms {
			if rights, err := unix.ParseUnixRights(&cm); err == nil {
				fds = append(fds, rights...)
			}
		}
	}
	fail := func(err error) (runMsg, error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return runMsg{}, err
	}
	if len(fds) != 2 {
		return fail(fmt.Errorf("run with %d files, want 2", len(fds)))
	}
	if _, err := io.ReadFull(sock, hdr[n:]); err != nil {
		return fail(err)
	}
	size := binary.BigEndian.Uint32(hdr[:])
	if size > maxSpec {
		return fail(errors.New("spec too long"))
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(sock, data); err != nil {
		return fail(err)
	}
	args, env, err := parseSpec(data)
	if err != nil {
		return fail(err)
	}
	return runMsg{args: args, env: env, out: os.NewFile(uintptr(fds[0]), "out"), diag: os.NewFile(uintptr(fds[1]), "diag")}, nil
}

// parseSpec splits a spec into ARGS and environment entries.
func parseSpec(data []byte) (args, env []string, err error) {
	parts := bytes.Split(data, []byte{0})
	if len(parts) < 2 || len(parts[len(parts)-1]) != 0 {
		return nil, nil, errors.New("no run")
	}
	parts = parts[:len(parts)-1]
	n, err := strconv.Atoi(string(parts[0]))
	if err != nil || n < 0 || n > len(parts)-1 {
		return nil, nil, errors.New("bad spec")
	}
	for _, p := range parts[1 : 1+n] {
		args = append(args, string(p))
	}
	for _, p := range parts[1+n:] {
		env = append(env, string(p))
	}
	return args, env, nil
}
