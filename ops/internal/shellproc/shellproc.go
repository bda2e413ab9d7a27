package shellproc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// ControlPrefix starts every line the wrapper writes to its own stderr.
const ControlPrefix = "pi-sandbox-shellproc: "

// shimStartPrefix starts the shim's line for a command it could not start.
const shimStartPrefix = "pi-sandbox-shim: start: "

// StartFailedCode is the wrapper's exit status when the command could not be
// started; the control channel says why. A command can exit with the same
// code, so only a "start" control line makes it a start failure.
const StartFailedCode = 254

// Spec describes one command to wrap.
type Spec struct {
	// Command is the shell command string, run as `Shell -c Command`.
	// It must not contain NUL bytes.
	Command string
	// Shell is the absolute path of the shell that runs Command. Zero:
	// /bin/sh.
	Shell string
	// Dir is the absolute working directory. Zero: the transport's current
	// directory is kept.
	Dir string
	// Env holds KEY=VALUE entries exported to the command (not to the
	// wrapper). Keys must be shell identifiers.
	Env []string
	// ClearEnv starts the command with Env alone (`env -i`), not on top
	// of the wrapper's environment.
	ClearEnv bool
	// PIDFile is the per-call file where the wrapper records the process
	// group; its directory must exist and be writable. The plain wrapper
	// requires it (it also keeps PIDFile+".status" there while the command
	// runs); both files are removed when the command ends.
	PIDFile string
	// Shim is the path of the pi-sandbox binary in the target, run as
	// `SHIM __shim run --pidfile PIDFILE -- SHELL -c COMMAND` (protocol in
	// ops/shim). Zero: the plain setsid wrapper. The shim merges the
	// command's output itself and writes (and removes) the pid file; its
	// own stderr joins the control channel.
	Shim string
	// Probe is an optional sh snippet that sets the variable pv; it runs
	// in the wrapper just before the command starts and again after it
	// ends, reported as "probe-before PV" and "probe-after PV" control lines
	// (the docker backend reads the cgroup's oom_kill counter this way). It
	// should not fork: it runs twice per command.
	Probe string
}

// Script returns the wrapper script for `/bin/sh -c`.
func Script(s Spec) (string, error) {
	if strings.IndexByte(s.Command, 0) >= 0 {
		return "", errors.New("shellproc: command contains a NUL byte")
	}
	shell := s.Shell
	if shell == "" {
		shell = "/bin/sh"
	}
	if !path.IsAbs(shell) {
		return "", fmt.Errorf("shellproc: shell %q is not absolute", shell)
	}
	if s.Dir != "" && !path.IsAbs(s.Dir) {
		return "", fmt.Errorf("shellproc: dir %q is not absolute", s.Dir)
	}
	var b strings.Builder
	start := func(what string) string {
		return "{ echo \"" + ControlPrefix + "start " + what + "\" >&2; exit " + strconv.Itoa(StartFailedCode) + "; }"
	}
	if s.Dir != "" {
		// chdir's errno is not visible to sh; reconstruct it: missing (or a
		// dangling link) is ENOENT, present but not a directory ENOTDIR, a
		// directory we cannot enter EACCES.
		fmt.Fprintf(&b, "d=%s\n", Quote(s.Dir))
		b.WriteString("if [ ! -d \"$d\" ]; then if [ -e \"$d\" ]; then c=ENOTDIR; else c=ENOENT; fi; " +
			start("chdir $c") + "; fi\n")
		b.WriteString("cd \"$d\" 2>/dev/null || " + start("chdir EACCES") + "\n")
	}
	// Find setsid before the caller's PATH could hide it, without a
	// subshell (a fork per command).
	b.WriteString("ss=\nfor x in /usr/bin/setsid /bin/setsid /usr/sbin/setsid /sbin/setsid; do " +
		"if [ -x \"$x\" ]; then ss=$x; break; fi; done\n")
	b.WriteString("[ -n \"$ss\" ] || " + start("setsid ENOENT") + "\n")
	// argv holds words already quoted for sh. The shim, when present, also
	// runs as the session leader, so the group kill still reaches everything
	// that did not leave the group, even if the shim itself is killed.
	argv := []string{"\"$ss\""}
	redir := " </dev/null 2>&1"
	if s.Shim != "" {
		fmt.Fprintf(&b, "[ -x %s ] || %s\n", Quote(s.Shim), start("shim ENOENT"))
		argv = append(argv, Quote(s.Shim), "__shim", "run")
		if s.PIDFile != "" {
			argv = append(argv, "--pidfile", Quote(s.PIDFile))
		}
		argv = append(argv, "--")
		redir = " </dev/null"
	}
	argv = append(argv, Quote(shell), "-c", Quote(s.Command))
	fmt.Fprintf(&b, "[ -x %s ] || %s\n", Quote(shell), start("shell ENOENT"))
	probe := func(when string) string {
		if s.Probe == "" {
			return ""
		}
		return "pv=\n" + s.Probe + "\necho \"" + ControlPrefix + "probe-" + when + " $pv\" >&2\n"
	}
	b.WriteString(probe("before"))
	// The subshell keeps the exports away from the wrapper and execs the
	// session leader, so $! is its pid, which is the new group's id.
	var launch strings.Builder
	launch.WriteString("(")
	if s.ClearEnv {
		argv = append([]string{"env", "-i"}, argv...)
	}
	for i, kv := range s.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !isIdent(k) {
			return "", fmt.Errorf("shellproc: bad environment entry %q", kv)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return "", fmt.Errorf("shellproc: environment value of %s contains a NUL byte", k)
		}
		if s.ClearEnv {
			// Arguments of env, after -i, before the command.
			argv = slices.Insert(argv, 2+i, Quote(kv))
			continue
		}
		fmt.Fprintf(&launch, "export %s=%s; ", k, Quote(v))
	}
	launch.WriteString("exec " + strings.Join(argv, " ") + redir + ") &\np=$!\n")
	pgid := "echo \"" + ControlPrefix + "pgid $p\" >&2\n"
	exit := "echo \"" + ControlPrefix + "exit $s\" >&2\n"
	// Whatever the command left in its group dies with it; POSIX does not
	// reuse a group id while a member lives, so this cannot hit a stranger.
	kill := "[ -n \"$p\" ] && kill -9 -$p 2>/dev/null\n"
	// The last line: its absence means the wrapper itself was killed
	// (with the whole container, say), whatever "exit" said.
	done := "echo \"" + ControlPrefix + "done\" >&2\n"

	if s.Shim != "" {
		// The shim holds the output until it is idle after the command's
		// exit (its --grace) and sweeps the tree itself.
		b.WriteString(launch.String() + pgid + "wait $p\ns=$?\n" + kill + probe("after") + exit + done + "exit $s\n")
		return b.String(), nil
	}

	// The plain wrapper: the command writes into a pipe that cat copies to
	// the wrapper's stdout, so the wrapper learns when every process holding
	// the output has closed it (cat's EOF), while the "exit" control line
	// tells the caller at once that the shell itself has ended. A caller
	// that stops waiting for orphans (the exit grace) kills the group, which
	// ends cat. The pipeline's left side is a subshell, so the pgid and the
	// status come back through files.
	if s.PIDFile == "" {
		return "", errors.New("shellproc: the plain wrapper needs a PIDFile")
	}
	pf := Quote(s.PIDFile)
	sf := Quote(s.PIDFile + ".status")
	b.WriteString("{\n" + launch.String() + "echo $p > " + pf + "\n" + pgid +
		"wait $p\ns=$?\necho $s > " + sf + "\n" + probe("after") + exit + "} | cat\n")
	b.WriteString("p=; s=" + strconv.Itoa(StartFailedCode) + "\nread p 2>/dev/null < " + pf + "\nread s 2>/dev/null < " + sf + "\n")
	b.WriteString(kill + "rm -f " + pf + " " + sf + "\n" + done + "exit $s\n")
	return b.String(), nil
}

// KillGroupScript returns a script that sends SIGKILL to process group pgid.
// It always exits 0 (a group already gone is not an error).
func KillGroupScript(pgid int) string {
	return "kill -9 -" + strconv.Itoa(pgid) + " 2>/dev/null; exit 0"
}

// KillScript returns a script that kills the command whose pid file is
// pidFile, if the file is there (the wrapper or shim removes it when the
// command ends, so a late kill does nothing). With a shim (its path in
// the target, as in Spec.Shim) the shim is asked first to kill every
// descendant, setsid escapees included, and waited for up to 2 s; then the
// group gets SIGKILL either way.
func KillScript(pidFile, shim string) string {
	q := Quote(pidFile)
	s := "p=$(cat " + q + " 2>/dev/null); "
	if shim != "" {
		s += Quote(shim) + " __shim kill --wait 2s " + q + " >/dev/null 2>&1; "
	}
	return s + "[ -n \"$p\" ] && kill -9 -$p 2>/dev/null; exit 0"
}

// Control is what the wrapper reported on its control channel.
type Control struct {
	// PGID is the command's process group, 0 if not reported (yet).
	PGID int
	// Start is set when the command could not start: a [*fs.PathError] with
	// Op "chdir" and an ops.Errno, or an error naming the missing program.
	Start error
	// Exit is the command's exit status; HaveExit says it was reported.
	Exit     int
	HaveExit bool
	// Done is set by the wrapper's last line, just before it exits.
	Done bool
	// ProbeBefore and ProbeAfter are the values Spec.Probe reported.
	ProbeBefore, ProbeAfter string
	// ForkFailed is set when the wrapper's shell or the shim said it could
	// not fork (or create a thread): a process limit was reached.
	ForkFailed bool
}

// forkFailures are what shells and the Go runtime print when fork or
// clone fails with EAGAIN: busybox ash, dash, bash ("fork: retry: ...",
// "fork: Resource temporarily unavailable"), and a Go shim that cannot
// start a thread.
var forkFailures = []string{"can't fork", "cannot fork", "Cannot fork", "fork: retry", "fork: Resource temporarily unavailable", "failed to create new OS thread", "pthread_create failed"}

// ParseControl parses the wrapper's stderr. dir is the Spec's Dir, used as
// the path of a chdir failure. Lines without the prefix are ignored.
func ParseControl(stderr []byte, dir string) Control {
	var c Control
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		c.ParseLine(sc.Text(), dir)
	}
	return c
}

// ParseLine applies one control line (without its newline) to c.
func (c *Control) ParseLine(line, dir string) {
	if rest, ok := strings.CutPrefix(line, shimStartPrefix); ok {
		// "OP PATH: CODE" from the shim.
		if i := strings.LastIndex(rest, ": "); i > 0 {
			op, p, _ := strings.Cut(rest[:i], " ")
			c.Start = ops.PathError(op, p, ops.Errno(rest[i+2:]))
			if rest[i+2:] == "EAGAIN" {
				// fork/clone: a pids limit or RLIMIT_NPROC.
				c.Start = fmt.Errorf("%w (%w)", ops.ErrProcessLimit, c.Start)
			}
		}
		return
	}
	rest, ok := strings.CutPrefix(line, ControlPrefix)
	if !ok {
		for _, f := range forkFailures {
			if strings.Contains(line, f) {
				c.ForkFailed = true
			}
		}
		return
	}
	word, arg, _ := strings.Cut(rest, " ")
	switch word {
	case "pgid":
		if n, err := strconv.Atoi(arg); err == nil {
			c.PGID = n
		}
	case "exit":
		if n, err := strconv.Atoi(arg); err == nil {
			c.Exit, c.HaveExit = n, true
		}
	case "done":
		c.Done = true
	case "probe-before":
		c.ProbeBefore = arg
	case "probe-after":
		c.ProbeAfter = arg
	case "start":
		what, code, _ := strings.Cut(arg, " ")
		switch what {
		case "chdir":
			c.Start = ops.PathError("chdir", dir, ops.Errno(code))
		default:
			c.Start = fmt.Errorf("shellproc: %s not found in the target", what)
		}
	}
}

// Quote quotes s for a POSIX shell ([shquote.Quote], for the docker backend).
func Quote(s string) string { return shquote.Quote(s) }

func isIdent(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
