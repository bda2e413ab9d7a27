package integration

import (
	"encoding/hex"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// thief is the key's thief of the adversarial run: a process of the
// sandbox user that watches /proc for the CLI's relays and probe shells
// and opens each one's stdin (/proc/PID/fd/0); a probe shell's it keeps
// until the shell has become the relay (exec), then stops that process and
// peeks the pipe with tee(2), which reads without consuming. It logs "seen
// PID", "open PID ok|ERR" and "data PID HEX" lines to /tmp/thief.out;
// $ARGV[0] is tee's syscall number.
const thief = `
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

// TestDockerUpKeyNotReadable: a background process of the sandbox user
// cannot read the sandbox's helper key from the CLI calls' relays or
// probes: a relay holding it has never been dumpable, and no shell holds
// the stream it travels on. (It can see them: the test proves the thief
// watches the right processes.)
func TestDockerUpKeyNotReadable(t *testing.T) {
	id, _ := piUpImage(t, "pi-sandbox/debian", "up-key-thief")
	mustBash(t, id, "echo warm")
	out, err := exec.Command("docker", "inspect", "-f", `{{index .Config.Labels "pi-sandbox.helper-key"}}`, id).Output()
	key := strings.TrimSpace(string(out))
	if err != nil || len(key) != 64 {
		t.Fatalf("helper key label: %q, %v", out, err)
	}
	tee := "276"
	if runtime.GOARCH == "arm64" {
		tee = "77"
	}
	if out, err := exec.Command("docker", "exec", "-d", "-u", "1000:1000", id, "perl", "-e", thief, tee).CombinedOutput(); err != nil {
		t.Fatalf("start the thief: %v: %s", err, out)
	}
	loot := func() string {
		out, _ := exec.Command("docker", "exec", id, "cat", "/tmp/thief.out").Output()
		return string(out)
	}
	for deadline := time.Now().Add(20 * time.Second); !strings.HasPrefix(loot(), "ready\n"); {
		if time.Now().After(deadline) {
			t.Fatalf("the thief did not start: %q", loot())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Without the daemon's host socket (a process of the sandbox user may
	// remove it) every call goes through a relay: the one that holds the
	// key.
	mustBash(t, id, "rm -f "+shim.HostDir+"/"+shim.HostSocket)
	for range 8 {
		if got := mustBash(t, id, "echo hi"); got != "hi\n" {
			t.Fatalf("bash: %q", got)
		}
	}
	l := loot()
	t.Logf("the thief's log:\n%s", l)
	if strings.Contains(l, key) || strings.Contains(l, hex.EncodeToString([]byte(key))) {
		t.Fatal("a process of the sandbox user read the sandbox's helper key")
	}
	relays := 0
	for _, line := range strings.Split(l, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "open" && f[2] != "ok" {
			relays++
		}
	}
	if !strings.Contains(l, "seen ") || relays == 0 {
		t.Fatal("the thief saw no relay it could not open: it does not watch the CLI's processes")
	}
}
