package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// hardening2Faults replays the second adversarial run's defects against
// `pi-sandbox up` sandboxes and containers of the docker engine, through
// the CLI under test: 1 (the helper key read from inside), 2 (a hostile
// helper's endless or missing hello), 4 (a FIFO at the daemon's log), 5
// (a command lowering its shim's or the daemon's limits) and 8 (a command
// that kills its shim and leaves a setsid child).
func hardening2Faults(ctx context.Context, o *options, p *progress, e *env) []scenResult {
	if e.name != "docker" {
		return nil
	}
	var rows []scenResult
	add := func(name string, r scenResult) {
		r.Backend, r.Scenario = e.name, name
		rows = append(rows, r)
	}
	p.step("docker: 24.1 the up sandbox's helper key read from inside")
	add("24.1 a process of the sandbox user watching /proc peeks (tee(2)) the stdin of every CLI relay and probe over 8 calls → the helper key never read", keyTheft(ctx, o))
	p.step("docker: 24.2 a hostile helper")
	add("24.2 a planted helper answering hello with an endless JSON string / not at all → within 15 s the call fails naming the bound or recovers (a genuine helper uploaded in its place), CLI peak RSS < 64 MiB", hostileReplies(ctx, o))
	p.step("docker: 24.4 a FIFO at the daemon's log")
	add("24.4 up: the daemon stopped and a FIFO put at its helper.log, ×3 → the next call answers within 10 s under a fresh daemon, helper.log a regular file", logFIFO(ctx, o))
	p.step("docker: 24.5 limits of the shim and the daemon lowered")
	add("24.5 up: `prlimit --fsize=1000` on $PPID (the pooled shim), then on the daemon → the call says so; the next call writes 10 KiB (after the daemon's change under a restarted daemon)", limitsChanged(ctx, o))
	n := max(o.trials/10, 5)
	p.step("docker: 24.8 killed shim with a setsid child ×%d", n)
	add("24.8 up: `kill -9 $PPID` with a `setsid sleep` child (after it, or racing it), 2 s timeout → nothing left running 5 s later", killedShim(ctx, o, n))
	return rows
}

// upSandbox starts a sandbox with `pi-sandbox up`; down removes it.
func upSandbox(ctx context.Context, o *options) (id string, down func(), err error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, o.bin, "up", "--image", o.image, "--label", benchLabel+"="+fmt.Sprint(os.Getpid())).Output()
	id = strings.TrimSpace(string(out))
	if err != nil || len(id) != 64 {
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%v: %s", err, firstLine(string(ee.Stderr)))
		}
		return "", nil, fmt.Errorf("pi-sandbox up: %q: %v", id, err)
	}
	return id, func() { exec.Command(o.bin, "down", id).Run() }, nil
}

// upBash runs bash in container id through the CLI: the result's text and
// how long the call took. A call that has not answered hangLimit after its
// timeout is cut.
func upBash(ctx context.Context, o *options, id, command string, timeout int) (string, time.Duration, error) {
	args := map[string]any{"command": command}
	if timeout > 0 {
		args["timeout"] = timeout
	}
	in, _ := json.Marshal(args)
	out, code, _, d, err := cliRunWithin(ctx, o, hangLimit+time.Duration(timeout)*time.Second, nil, "--backend", "docker", "--container", id, "bash", string(in))
	if err == nil && code != 0 && !strings.HasPrefix(strings.TrimSpace(out), "{") {
		err = fmt.Errorf("exit %d: %s", code, firstLine(out))
	}
	return resultOf(out), d, err
}

// dockerExec runs args in container id (user "" is the container's).
func dockerExec(ctx context.Context, id, user string, args ...string) (string, error) {
	a := []string{"exec"}
	if user != "" {
		a = append(a, "-u", user)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, "docker", append(append(a, id), args...)...).CombinedOutput()
	return string(out), err
}

// keyThief is the thief of the adversarial run: a process of the sandbox
// user that watches /proc for the CLI's relays and probe shells, opens
// each one's stdin (/proc/PID/fd/0), waits for a probe to become the relay
// (exec), stops that process and peeks the pipe with tee(2), which reads
// without consuming. It logs "seen PID", "open PID ok|ERR" and "data PID
// HEX" to /tmp/thief.out; $ARGV[0] is tee's syscall number.
const keyThief = `
use strict; use warnings; use Fcntl;
my $tee = $ARGV[0];
open(my $out, ">>", "/tmp/thief.out") or die; select((select($out), $| = 1)[0]);
pipe(my $pr, my $pw) or die; fcntl($pr, F_SETFL, O_NONBLOCK);
my %seen;
sub cmdline { open(my $c, "<", "/proc/$_[0]/cmdline") or return undef; my $cl = do { local $/; <$c> }; close $c; return $cl }
print $out "ready\n";
while (1) {
  opendir(my $d, "/proc") or die;
  for my $p (grep { /^\d+$/ && $_ != $$ } readdir $d) {
    next if $seen{$p};
    my $cl = cmdline($p);
    next unless defined $cl && ($cl =~ /__shim\0relay/ || $cl =~ /pi-sandbox-probe-done/);
    $seen{$p} = 1;
    print $out "seen $p\n";
    if (!sysopen(my $fd, "/proc/$p/fd/0", O_RDONLY|O_NONBLOCK)) { print $out "open $p $!\n"; next }
    else {
      print $out "open $p ok\n";
      my $relay = 0;
      for (1..300000) {
        my $now = cmdline($p);
        last unless defined $now && length $now;
        if ($now =~ /__shim\0relay/) { $relay = 1; last }
      }
      next unless $relay;
      kill 'STOP', $p;
      for (1..400) {
        my $n = syscall($tee, fileno($fd), fileno($pw), 65536, 2);
        if ($n > 0) {
          my $buf = ''; sysread($pr, $buf, 65536);
          print $out "data $p ", unpack("H*", $buf), "\n";
          last if length($buf) >= 65;
        }
        select(undef, undef, undef, 0.005);
      }
      kill 'CONT', $p;
    }
  }
  closedir $d;
}
`

func keyTheft(ctx context.Context, o *options) scenResult {
	id, down, err := upSandbox(ctx, o)
	if err != nil {
		return scenResult{Skipped: err.Error()}
	}
	defer down()
	if _, err := dockerExec(ctx, id, "", "sh", "-c", "command -v perl"); err != nil {
		return scenResult{Skipped: "no perl in " + o.image + " (the thief is a perl script; use -image pi-sandbox/debian)"}
	}
	if _, _, err := upBash(ctx, o, id, "echo warm", 0); err != nil {
		return scenResult{Skipped: "first call: " + err.Error()}
	}
	out, err := exec.CommandContext(ctx, "docker", "inspect", "-f", `{{index .Config.Labels "pi-sandbox.helper-key"}}`, id).Output()
	key := strings.TrimSpace(string(out))
	if err != nil || len(key) != 64 {
		return scenResult{Skipped: fmt.Sprintf("the helper key label: %q, %v", key, err)}
	}
	tee := "276"
	if runtime.GOARCH == "arm64" {
		tee = "77"
	}
	if out, err := exec.CommandContext(ctx, "docker", "exec", "-d", "-u", "1000:1000", id, "perl", "-e", keyThief, tee).CombinedOutput(); err != nil {
		return scenResult{Skipped: fmt.Sprintf("start the thief: %v: %s", err, out)}
	}
	loot := func() string { s, _ := dockerExec(ctx, id, "", "cat", "/tmp/thief.out"); return s }
	for deadline := time.Now().Add(20 * time.Second); !strings.HasPrefix(loot(), "ready\n"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return scenResult{Skipped: "the thief did not start: " + firstLine(loot())}
		}
	}
	const calls = 8
	r := scenResult{Trials: calls}
	var lats []time.Duration
	for i := range calls {
		text, d, err := upBash(ctx, o, id, "echo hi", 0)
		lats = append(lats, d)
		if err != nil || text != "hi\n" {
			r.Failures++
			r.FirstFail = fmt.Sprintf("call %d: %q, %v", i, firstLine(text), err)
		}
	}
	l := loot()
	hexKey := hex.EncodeToString([]byte(key))
	seen, opened, refused, peeks, stolen := 0, 0, 0, 0, 0
	for _, line := range strings.Split(l, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "seen":
			seen++
		case len(f) >= 3 && f[0] == "open" && f[2] == "ok":
			opened++
		case len(f) >= 3 && f[0] == "open":
			refused++
		case len(f) == 3 && f[0] == "data":
			peeks++
			if strings.Contains(f[2], hexKey) {
				stolen++
			}
		}
	}
	if strings.Contains(l, key) && stolen == 0 {
		stolen = 1
	}
	if seen == 0 {
		r.Failures++
		r.FirstFail = "the thief saw no relay or probe: it does not watch the CLI's processes (the result is not trustworthy)"
	}
	if stolen > 0 {
		r.Failures += stolen
		r.FirstFail = fmt.Sprintf("the thief read the helper key %d times", stolen)
	}
	s := summarize(lats)
	r.P50Ms, r.P99Ms = s.P50Ms, s.P99Ms
	r.Note = fmt.Sprintf("return = the whole call; the thief saw %d relays and probes, opened the stdin of %d (refused %d), peeked %d times, read the key %d times", seen, opened, refused, peeks, stolen)
	return r
}

// upDaemon is the helper daemon of container id: its binary and directory.
func upDaemon(ctx context.Context, id string) (bin, dir string, err error) {
	out, err := dockerExec(ctx, id, "", "sh", "-c", `for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep '[_]_shim serve --listen'`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 1 {
		return "", "", fmt.Errorf("helper daemons in the container: %v: %q", err, out)
	}
	f := strings.Fields(lines[0])
	if len(f) < 5 {
		return "", "", fmt.Errorf("daemon %q", lines[0])
	}
	return f[0], f[4], nil
}

func logFIFO(ctx context.Context, o *options) scenResult {
	id, down, err := upSandbox(ctx, o)
	if err != nil {
		return scenResult{Skipped: err.Error()}
	}
	defer down()
	if _, _, err := upBash(ctx, o, id, "echo warm", 0); err != nil {
		return scenResult{Skipped: "first call: " + err.Error()}
	}
	const n = 3
	r := scenResult{Trials: n}
	var lats []time.Duration
	fail := func(s string) {
		r.Failures++
		if r.FirstFail == "" {
			r.FirstFail = s
		}
	}
	for i := range n {
		bin, dir, err := upDaemon(ctx, id)
		if err != nil {
			fail(fmt.Sprintf("trial %d: %v", i, err))
			break
		}
		script := bin + " __shim relay --stop " + dir + ` && rm -f "` + dir + `/helper.log" && mkfifo "` + dir + `/helper.log"`
		if out, err := dockerExec(ctx, id, "1000:1000", "sh", "-c", script); err != nil {
			fail(fmt.Sprintf("trial %d: plant the FIFO: %v: %s", i, err, firstLine(out)))
			break
		}
		text, d, err := upBash(ctx, o, id, "echo hi", 0)
		lats = append(lats, d)
		kind, _ := dockerExec(ctx, id, "", "stat", "-c", "%F", dir+"/helper.log")
		switch {
		case err != nil && d >= hangLimit:
			r.Hangs++
			fail(fmt.Sprintf("trial %d: %v", i, err))
		case err != nil || text != "hi\n":
			fail(fmt.Sprintf("trial %d: %q, %v", i, firstLine(text), err))
		case d > 10*time.Second:
			fail(fmt.Sprintf("trial %d: the call took %.1f s", i, d.Seconds()))
		case !strings.Contains(kind, "regular"):
			fail(fmt.Sprintf("trial %d: helper.log is %q", i, strings.TrimSpace(kind)))
		}
		if r.Hangs > 0 {
			break // each later call would wait as long
		}
	}
	s := summarize(lats)
	r.P50Ms, r.P99Ms = s.P50Ms, s.P99Ms
	r.Note = "return = the whole next call"
	return r
}

const write10K = "head -c 10240 /dev/zero > /tmp/pibench-big && wc -c < /tmp/pibench-big"

func limitsChanged(ctx context.Context, o *options) scenResult {
	id, down, err := upSandbox(ctx, o)
	if err != nil {
		return scenResult{Skipped: err.Error()}
	}
	defer down()
	if _, err := dockerExec(ctx, id, "", "sh", "-c", "command -v prlimit"); err != nil {
		return scenResult{Skipped: "no prlimit in " + o.image + " (use -image pi-sandbox/debian)"}
	}
	r := scenResult{Trials: 3} // the shim's, the daemon's, a later call
	var notes []string
	fail := func(s string) {
		r.Failures++
		if r.FirstFail == "" {
			r.FirstFail = s
		}
	}
	for _, c := range []struct{ who, pid, says, after string }{
		{"shim", "$PPID", "changed the resource limits of the process that started it", ""},
		{"daemon", "$(cut -d' ' -f4 /proc/$PPID/stat)", "changed the resource limits of the helper daemon", "the helper daemon was restarted"},
	} {
		text, _, err := upBash(ctx, o, id, "prlimit --pid "+c.pid+" --fsize=1000", 30)
		if err != nil || !strings.Contains(text, c.says) {
			fail(fmt.Sprintf("%s: the call says %q (%v)", c.who, lastLines(text, 2), err))
			continue
		}
		next, d, err := upBash(ctx, o, id, write10K, 0)
		notes = append(notes, fmt.Sprintf("%s: next call %.2f s: %s", c.who, d.Seconds(), strings.ReplaceAll(strings.TrimSpace(next), "\n", " ")))
		if err != nil || !strings.HasPrefix(next, "10240\n") || !strings.Contains(next, c.after) {
			fail(fmt.Sprintf("%s: the next call: %q (%v)", c.who, lastLines(next, 2), err))
		}
	}
	if text, _, err := upBash(ctx, o, id, write10K, 0); err != nil || text != "10240\n" {
		fail(fmt.Sprintf("a later call: %q (%v)", lastLines(text, 2), err))
	}
	r.Note = strings.Join(notes, "; ")
	return r
}

func killedShim(ctx context.Context, o *options, n int) scenResult {
	id, down, err := upSandbox(ctx, o)
	if err != nil {
		return scenResult{Skipped: err.Error()}
	}
	defer down()
	t := newTagger()
	r := scenResult{Trials: n}
	var lats []time.Duration
	for i := range n {
		command := "setsid sleep " + t.arg(i, 0) + " & sleep 0.3; kill -9 $PPID; sleep 30"
		if i%2 == 1 {
			command = "kill -9 $PPID; setsid sleep " + t.arg(i, 1) + " & sleep 5"
		}
		text, d, err := upBash(ctx, o, id, command, 2)
		lats = append(lats, d)
		switch {
		case d > 2*time.Second+hangLimit:
			r.Hangs++
			r.Failures++
			r.FirstFail = fmt.Sprintf("trial %d: returned %.1f s after its timeout", i, (d - 2*time.Second).Seconds())
		case err != nil:
			r.Failures++
			r.FirstFail = fmt.Sprintf("trial %d: %v", i, err)
		case !strings.Contains(text, "timed out") && !strings.Contains(text, "killed"):
			r.Outcomes = addOutcome(r.Outcomes, firstLine(lastLines(text, 1)))
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for hostSurvivors(t) != 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	r.Survivors = hostSurvivors(t)
	s := summarize(lats)
	r.P50Ms, r.P99Ms = s.P50Ms, s.P99Ms
	r.Note = "return = the whole call; survivors counted in the host's /proc 5 s after the last call"
	return r
}

func addOutcome(m map[string]int, k string) map[string]int {
	if m == nil {
		m = map[string]int{}
	}
	m[k]++
	return m
}
