package shim

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
)

// A command can lower the daemon's resource limits (prlimit(2) on a
// process of its own user needs no privilege). Every command started
// after that would inherit them, a lowered hard limit cannot be raised,
// and too low a limit of open files breaks the daemon itself (its opens
// fail). So the daemon compares its limits with those it started with
// when a connection arrives, before the session is served, and after each
// command; when they differ it replaces itself: it writes the marker
// DIR/limits-changed, closes its socket and shuts down (its sessions and
// background processes end), and the next relay finds no daemon and
// starts a fresh one — a new exec, with the limits the sandbox gives it.
// The command that changed them is told so at the end of its output; the
// new daemon tells the first command it runs.

const (
	// daemonLimitsMarker is left by a daemon replaced for its limits.
	daemonLimitsMarker = "limits-changed"
	// maxMarker bounds what is read of the marker (a command can write it).
	maxMarker = 512
	// replaceGrace lets the reply of the command that changed the limits
	// leave before the daemon's sessions are closed.
	replaceGrace = 300 * time.Millisecond
)

// daemonLimits is the daemon's part of the limits check.
type daemonLimits struct {
	dir      string
	start    native.Limits
	once     sync.Once
	replaced chan struct{} // closed when the daemon must shut down
	close    func()        // closes the listener

	mu   sync.Mutex
	note string // for the first command this daemon runs; "" once told
}

// newDaemonLimits records this process's limits and takes the note a
// daemon replaced before this one left.
func newDaemonLimits(dir string, closeListener func()) *daemonLimits {
	l := &daemonLimits{dir: dir, start: native.OwnLimits(), replaced: make(chan struct{}), close: closeListener}
	if why, ok := takeMarker(filepath.Join(dir, daemonLimitsMarker)); ok {
		l.note = "\n[pi-sandbox: the helper daemon was restarted: a command had changed its resource limits"
		if why != "" {
			l.note += " (" + why + ")"
		}
		l.note += "; the background processes it owned ended]\n"
	}
	return l
}

// changed names the limits that differ from the daemon's start ("": none).
func (l *daemonLimits) changed() string {
	return l.start.Changed(native.OwnLimits())
}

// check replaces the daemon (after grace) when its limits changed, and
// names them ("": unchanged).
func (l *daemonLimits) check(grace time.Duration) string {
	why := l.changed()
	if why != "" {
		l.replace(why, grace)
	}
	return why
}

// afterRun is what ends the output of a command the daemon ran: the note
// of a restart (to the first command only) and, when the limits differ
// now, that this command changed them; why names them then, and the
// caller calls replace once the command's reply is sent.
func (l *daemonLimits) afterRun() (note string, why string) {
	l.mu.Lock()
	note, l.note = l.note, ""
	l.mu.Unlock()
	if why = l.changed(); why != "" {
		note += fmt.Sprintf("\n[pi-sandbox: this command changed the resource limits of the helper daemon (%s): the daemon is replaced by a fresh one; the background processes it owned end]\n", why)
	}
	return note, why
}

// replace marks the daemon for replacement: the marker for the next
// daemon, the socket closed (a relay starts a fresh daemon), and after
// grace the shutdown.
func (l *daemonLimits) replace(why string, grace time.Duration) {
	l.once.Do(func() {
		log.Printf("pi-sandbox-shim: serve: resource limits changed (%s): replaced", why)
		// Before the socket closes (a relay then starts the next daemon
		// at once); after, when the open needs the listener's descriptor.
		marker := filepath.Join(l.dir, daemonLimitsMarker)
		written := writeMarker(marker, why)
		l.close()
		if !written {
			writeMarker(marker, why)
		}
		time.AfterFunc(grace, func() { close(l.replaced) })
	})
}

// writeMarker leaves why in a new regular file name, and reports whether
// it could (with too few file descriptors left, the next daemon says
// nothing).
func writeMarker(name, why string) bool {
	os.Remove(name)
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return false
	}
	f.WriteString(why)
	return f.Close() == nil
}

// takeMarker reads and removes the marker; why keeps only the characters
// a limit's report has (a command of the sandbox can write the file).
func takeMarker(name string) (why string, ok bool) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if _, lerr := os.Lstat(name); lerr == nil {
			os.Remove(name)
		}
		return "", false
	}
	defer os.Remove(name)
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", true
	}
	buf := make([]byte, maxMarker)
	n, _ := f.Read(buf)
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(" _/(),.", r):
			return r
		}
		return -1
	}, string(buf[:n])), true
}
