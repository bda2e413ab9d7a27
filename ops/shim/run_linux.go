package shim

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

const (
	// copyBuf is the size of the command's output pipe and of the reads
	// that copy it.
	copyBuf     = 256 << 10
	startFailed = 125
	// killLimit bounds the sweep; only a process stuck in the kernel lasts.
	killLimit = 10 * time.Second
	// drainWait bounds reading after the sweep (a process outside the tree
	// that received the pipe over a socket).
	drainWait  = 200 * time.Millisecond
	drainLimit = time.Second
)

func runMain(args []string, stderr io.Writer) int {
	ps := newProcState()
	if len(args) == 2 && args[0] == "--runs" {
		// A pooled shim: its runs come from the backend (runs_linux.go).
		return serveRuns(ps, args[1])
	}
	closePinOnExec()
	pr, pw, err := commandPipe()
	if err != nil {
		fmt.Fprintf(stderr, "pi-sandbox-shim: start: pipe: %s\n", errnoName(err, syscall.EIO))
		return startFailed
	}
	r := runOnce(ps, args, runIO{
		out: os.Stdout, diag: stderr, pr: pr, pw: pw,
		// After a detach the call's pipes close: the caller reads EOF on
		// both, the shim stays as the owner of what the command left.
		closeCall: func() {
			null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if null != nil {
				unix.Dup2(int(null.Fd()), 1)
				unix.Dup2(int(null.Fd()), 2)
				null.Close()
			}
		},
	})
	if r.detached || r.early {
		return r.code
	}
	sayDone(stderr, r.status)
	os.Stdout.Close()
	os.Stderr.Close()
	if r.status.Signaled() {
		raise(r.status.Signal())
	}
	return r.code
}

// procState is what a shim process sets up once, for every run it serves.
type procState struct {
	subreaperErr error
	sigs         chan os.Signal // kill requests
	devnull      *os.File       // the commands' stdin
	devnullErr   error

	lifelines map[int]<-chan struct{}
}

// newProcState does the setup that needs no argument, so a pooled shim
// has it done before its first run arrives, once for all its runs (signal
// handling starts threads, which took a millisecond on the path of each
// command).
func newProcState() *procState {
	ps := &procState{lifelines: map[int]<-chan struct{}{}}
	ps.subreaperErr = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	_ = syscall.Setpgid(0, 0) // EPERM for a session leader, which leads its group already
	ps.sigs = make(chan os.Signal, 4)
	signal.Notify(ps.sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// A vanished reader must end in a sweep (the failed write on stdout
	// says so), not in the shim's death with the tree left running. Notify,
	// not Ignore: an ignored SIGPIPE would be inherited by the command.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	go func() {
		for range pipes {
		}
	}()
	// Opened once: a path walk from / is a round trip to the storage
	// driver's daemon on fuse-overlayfs.
	ps.devnull, ps.devnullErr = os.Open(os.DevNull)
	return ps
}

// lifeline is watchLifeline(fd), once per fd for the process.
func (ps *procState) lifeline(fd int) <-chan struct{} {
	if ch, ok := ps.lifelines[fd]; ok {
		return ch
	}
	ch := watchLifeline(fd)
	ps.lifelines[fd] = ch
	return ch
}

// commandPipe is a command's output pipe, enlarged: a fast command's
// output moves in fewer, larger reads and writes (a refusal keeps the
// default).
func commandPipe() (pr, pw *os.File, err error) {
	pr, pw, err = os.Pipe()
	if err == nil {
		_, _ = unix.FcntlInt(pw.Fd(), unix.F_SETPIPE_SZ, copyBuf)
	}
	return pr, pw, err
}

// runIO is one run's files: out takes the command's output, diag the
// shim's status lines; pr and pw are the command's pipe (the shim copies pr
// to out). closeCall closes the call's ends of out and diag after a detach.
// ownGroup runs the command in a process group of its own, killed when
// the run ends (a pooled shim, which outlives the run, is not in it).
type runIO struct {
	out       *os.File
	diag      io.Writer
	pr, pw    *os.File
	closeCall func()
	ownGroup  bool
}

// runResult is how a run ended. code is the shim's exit status for it;
// status the command's; detached: the shim owns what the command left and
// has ended the call; early: it ended before the command started (bad
// arguments, a start failure); clean: the command exited normally and left
// no process, no output reader and nothing to sweep — the shim, its
// subreaper role included, is as it was before the run.
type runResult struct {
	code     int
	status   syscall.WaitStatus
	detached bool
	early    bool
	clean    bool
}

// runOnce runs one command: `__shim run ARGS` (see the package doc).
func runOnce(ps *procState, args []string, rio runIO) runResult {
	stderr := rio.diag
	fs := flag.NewFlagSet("__shim run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pidfile := fs.String("pidfile", "", "write the shim's pid to `FILE`")
	dir := fs.String("dir", "", "run the command in `DIR`")
	grace := fs.Duration("grace", 100*time.Millisecond, "idle time after the command exits before the tree is killed")
	detach := fs.String("detach", "", "when the command exits normally and leaves processes running, keep them: copy their output to `LOGFILE` and stay as their owner")
	logCap := fs.Int64("log-cap", 1<<30, "cap of the --detach log in `BYTES`")
	refuse := fs.Bool("refuse-detach", false, "when the command leaves processes running, kill them and say so (the sandbox owns its limit of background processes)")
	lifeline := fs.Int("lifeline", -1, "a file descriptor whose end of input (its writer died) is a kill request")
	outputLimit := fs.Duration("output-limit", ops.ExitOutputLimit, "how long output that keeps coming after the command's exit may hold the run (0: no bound; the caller's timeout bounds it)")
	early := func(code int) runResult {
		rio.pr.Close()
		rio.pw.Close()
		return runResult{code: code, early: true}
	}
	if err := fs.Parse(args); err != nil {
		return early(2)
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "pi-sandbox-shim: run: missing PROGRAM")
		return early(2)
	}
	diag := func(format string, a ...any) { fmt.Fprintf(stderr, "pi-sandbox-shim: "+format+"\n", a...) }

	if ps.subreaperErr != nil {
		diag("warning: subreaper: %v", ps.subreaperErr)
	}
	lost := ps.lifeline(*lifeline)
	sigs := ps.sigs

	if *pidfile != "" {
		if err := writePidfile(*pidfile); err != nil {
			// A start failure (a full disk, say), not the command's.
			diag("start: open %s: %s", *pidfile, errnoName(err, syscall.EIO))
			return early(startFailed)
		}
		defer os.Remove(*pidfile)
	}

	path := argv[0]
	// A path with a slash is the exec's to check (its errno is the same:
	// ENOENT, EACCES), one stat fewer on the way to every command; a bare
	// name is looked up in PATH.
	if !strings.Contains(path, "/") {
		p, err := exec.LookPath(path)
		if err != nil {
			diag("start: exec %s: %s", argv[0], errnoName(err, syscall.ENOENT))
			return early(startFailed)
		}
		path = p
	}
	if ps.devnullErr != nil {
		diag("start: open %s: %s", os.DevNull, errnoName(ps.devnullErr, syscall.EIO))
		return early(startFailed)
	}
	pr, pw := rio.pr, rio.pw
	attr := &syscall.ProcAttr{
		Dir:   *dir,
		Env:   os.Environ(),
		Files: []uintptr{ps.devnull.Fd(), pw.Fd(), pw.Fd()},
	}
	if rio.ownGroup {
		attr.Sys = &syscall.SysProcAttr{Setpgid: true}
	}
	pid, err := syscall.ForkExec(path, argv, attr)
	if err != nil {
		// The child's chdir or its exec failed (the errno does not say
		// which): the directory is checked now, off the path of every
		// command that starts.
		switch fi, serr := os.Stat(*dir); {
		case *dir != "" && serr != nil:
			diag("start: chdir %s: %s", *dir, errnoName(serr, syscall.ENOENT))
		case *dir != "" && !fi.IsDir():
			diag("start: chdir %s: ENOTDIR", *dir)
		default:
			diag("start: exec %s: %s", path, errnoName(err, syscall.ENOEXEC))
		}
		return early(startFailed)
	}
	pw.Close()

	if rio.ownGroup {
		diag("started %d", pid) // the group to kill if the shim cannot
	}
	statusCh := make(chan syscall.WaitStatus, 1)
	empty := make(chan struct{}) // closed when the shim has no child left
	go reap(pid, statusCh, empty)

	cp := &copier{activity: make(chan struct{}, 1), w: rio.out}
	copyDone := make(chan error, 1)
	go func() { copyDone <- cp.copy(pr) }()

	hangup, stopWatch := watchHangup(int(rio.out.Fd()))

	var (
		status   syscall.WaitStatus
		exited   bool
		graceT   *time.Timer
		graceC   <-chan time.Time
		limitT   *time.Timer
		limitC   <-chan time.Time
		tooLong  bool // output kept coming ops.ExitOutputLimit after the exit
		copyOpen = true
		normal   bool // the command exited and its output went quiet or closed
	)
loop:
	for {
		select {
		case status = <-statusCh:
			exited = true
			// Tell the caller now, not after the grace: a backend that times
			// out while orphans keep writing reports how the shell ended.
			diag("exited %d", exitStatus(status))
			if !copyOpen {
				normal = true
				break loop
			}
			graceT = time.NewTimer(*grace)
			graceC = graceT.C
			if *outputLimit > 0 {
				limitT = time.NewTimer(*outputLimit)
				limitC = limitT.C
			}
		case <-cp.activity:
			if graceT != nil {
				graceT.Reset(*grace)
			}
		case err := <-copyDone:
			copyOpen = false
			if err != nil { // our reader is gone
				break loop
			}
			if exited {
				normal = true
				break loop
			}
		case <-sigs:
			break loop
		case <-lost:
			break loop
		case <-hangup: // the reader went away while the command was silent
			break loop
		case <-graceC:
			if cp.busy.Load() || pending(pr) { // not idle: our reader is slow or starved
				graceT.Reset(*grace)
				continue
			}
			normal = true
			break loop
		case <-limitC:
			// Writers the command left keep the output busy: the call ends
			// with what came so far.
			normal, tooLong = true, true
			break loop
		}
	}
	if graceT != nil {
		graceT.Stop()
	}
	if limitT != nil {
		limitT.Stop()
	}
	left := hasChildren(empty)
	if normal && (*refuse || *detach != "") && left && len(descendants(os.Getpid())) > 0 {
		if *detach != "" {
			if tooLong {
				cp.farewell = ("\n[pi-sandbox: processes this command left running kept writing " + outputLimit.String() + " after it exited; they go on in the background, their output goes to " + *detach + " (see ps)]\n")
			}
			stopWatch()
			code := detachTree(diag, cp, pr, copyDone, copyOpen, empty, sigs, lost, *detach, *logCap, status, *pidfile, rio.closeCall)
			return runResult{code: code, status: status, detached: true}
		}
		diag("detach refused")
	}
	// No child at all means no descendant (orphans are re-parented to the
	// subreaper), so the /proc walk — milliseconds on a busy host — is
	// skipped in the common case of a command that left nothing behind.
	if left {
		if !killDescendants(os.Getpid(), killLimit) {
			diag("warning: processes survived the kill sweep")
		}
	}
	if rio.ownGroup && syscall.Kill(-pid, syscall.SIGKILL) == nil {
		// The command's group still had a member the sweep did not find:
		// an orphan the kernel gave to another reaper (gVisor does).
		left = true
	}
	if !exited {
		status = <-statusCh
	}
	clean := normal && !left && !copyOpen && !status.Signaled() && *pidfile == ""
	if copyOpen {
		cp.drain(copyDone, pr)
	}
	if tooLong && left {
		cp.note("\n[pi-sandbox: processes this command left running kept writing " + outputLimit.String() + " after it exited; they were killed]\n")
	}
	pr.Close()
	if *pidfile != "" {
		os.Remove(*pidfile)
	}
	if clean {
		// The reaper's last wait4 sees no child and returns: it must be
		// gone before a next run's command, whose status it would take.
		select {
		case <-empty:
		case <-time.After(time.Second):
			clean = false
		}
	}
	stopWatch()
	return runResult{code: exitStatus(status), status: status, clean: clean}
}

// sayDone writes the run's last status line: how the command ended. The
// caller then closes the run's stdout and stderr, so that a caller that
// reads the "done" line and the ends of both pipes has the call's outcome
// without waiting for this process's own exit (the Go runtime's teardown,
// and raise's delivery, take milliseconds on a busy host).
func sayDone(diag io.Writer, status syscall.WaitStatus) {
	if status.Signaled() {
		fmt.Fprintf(diag, "pi-sandbox-shim: done signal %d\n", int(status.Signal()))
	} else {
		fmt.Fprintf(diag, "pi-sandbox-shim: done exit %d\n", status.ExitStatus())
	}
}

// watchHangup reports when the reader of fd (the shim's stdout) has gone
// away — a dropped ssh connection, a killed docker exec — even while the
// command writes nothing: poll with no requested events reports only
// POLLERR, POLLHUP and POLLNVAL. stop ends the watch (and releases the
// reference the blocked poll holds on fd's file, so a later close of fd
// really closes it).
func watchHangup(fd int) (hung <-chan struct{}, stop func()) {
	ch := make(chan struct{})
	var wake [2]int
	if err := unix.Pipe2(wake[:], unix.O_CLOEXEC); err != nil {
		wake = [2]int{-1, -1}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fds := []unix.PollFd{{Fd: int32(fd)}, {Fd: int32(wake[0]), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, -1)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				return // no way to watch: rely on the failed write
			}
			if n > 0 && fds[1].Revents != 0 {
				return
			}
			if n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
				close(ch)
				return
			}
		}
	}()
	return ch, func() {
		if wake[1] >= 0 {
			unix.Write(wake[1], []byte{0})
			<-done
			unix.Close(wake[0])
			unix.Close(wake[1])
		}
	}
}

// exitStatus is the shell convention: the exit code, or 128+n for signal n.
func exitStatus(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// reap waits for every child (orphans are re-parented to the subreaper) and
// reports the command's own status.
func reap(pid int, statusCh chan<- syscall.WaitStatus, empty chan<- struct{}) {
	defer close(empty)
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil { // ECHILD: the tree is empty
			return
		}
		if p == pid {
			statusCh <- ws
		}
	}
}

// copier copies the command's pipe to the shim's stdout, or after a
// detach to the log.
type copier struct {
	activity chan struct{} // a ping per chunk (coalesced)
	busy     atomic.Bool   // a write to stdout is in progress
	mu       sync.Mutex    // held by a write; a detach swaps w under it
	w        io.Writer
	farewell string // written to the call's output as a detach swaps w
}

// copy copies r to c.w. A write error is returned (the reader is gone); end
// of input or a closed r is nil.
func (c *copier) copy(r *os.File) error {
	buf := make([]byte, copyBuf)
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			c.busy.Store(true)
			c.mu.Lock()
			_, err := c.w.Write(buf[:n])
			c.mu.Unlock()
			c.busy.Store(false)
			if err != nil {
				return err
			}
			select {
			case c.activity <- struct{}{}:
			default:
			}
		}
		if rerr != nil {
			return nil
		}
	}
}

// note writes a line of the shim's own to the call's output, between two
// chunks of the command's.
func (c *copier) note(text string) {
	c.mu.Lock()
	io.WriteString(c.w, text)
	c.mu.Unlock()
}

// drain waits for the copy to reach end of input after the sweep, while
// output keeps arriving (what was buffered), for at most drainLimit; then
// it closes r: a process outside the tree holds the pipe.
func (c *copier) drain(done <-chan error, r *os.File) {
	idle := time.NewTimer(drainWait)
	limit := time.NewTimer(drainLimit)
	defer idle.Stop()
	defer limit.Stop()
	for {
		select {
		case <-done:
			return
		case <-c.activity:
			idle.Reset(drainWait)
			continue
		case <-idle.C:
			if c.busy.Load() || pending(r) {
				idle.Reset(drainWait)
				continue
			}
		case <-limit.C:
		}
		r.Close()
		<-done
		return
	}
}

// raise ends the shim with the signal that killed the command, so the caller
// sees the same death. The Go runtime's handlers would turn many signals
// into a crash report (SIGABRT, SIGSEGV) or ignore them (SIGUSR1, SIGPIPE
// from kill), so the disposition is set to SIG_DFL with rt_sigaction
// directly (an all-zero struct sigaction). Core dumps are disabled first:
// the shim's core is of no use to anyone.
func raise(sig syscall.Signal) {
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	signal.Reset(sig)
	var act [4]uint64 // struct sigaction: handler SIG_DFL, no flags, empty mask
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	_ = syscall.Kill(os.Getpid(), sig)
	time.Sleep(100 * time.Millisecond) // delivery is asynchronous
}

func writePidfile(name string) error {
	tmp := name + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// errnoName names err's errno ("ENOENT"), or def's when it has none.
func errnoName(err error, def syscall.Errno) string {
	var se syscall.Errno
	if errors.As(err, &se) {
		if n := unix.ErrnoName(se); n != "" {
			return n
		}
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return "ENOENT"
	}
	return unix.ErrnoName(def)
}

// pending reports whether bytes wait in the pipe r (TIOCINQ is FIONREAD).
func pending(r *os.File) bool {
	n := 0
	if rc, err := r.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
	}
	return n > 0
}
