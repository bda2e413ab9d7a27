package integration

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// portProc is a running `pi-sandbox port`.
type portProc struct {
	cmd  *exec.Cmd
	addr string // its first stdout line
	out  *lockedBuffer
	errs *lockedBuffer
	done chan struct{}
	code int
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startPort starts `pi-sandbox port ARGS` and waits for its first line,
// the address it listens on; the process is killed at the test's end if it
// still runs.
func startPort(t *testing.T, args ...string) *portProc {
	t.Helper()
	if piBin == "" {
		skipOrFail(t, "no pi-sandbox binary: "+piBinErr.Error())
	}
	p := &portProc{cmd: exec.Command(piBin, append([]string{"port"}, args...)...), out: &lockedBuffer{}, errs: &lockedBuffer{}, done: make(chan struct{})}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.errs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	br := bufio.NewReader(stdout)
	line, err := br.ReadString('\n')
	go func() {
		io.Copy(p.out, br)
		p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	if err != nil {
		<-p.done
		t.Fatalf("port %v: no address line (%v): code %d, stderr %s", args, err, p.code, p.errs)
	}
	p.addr = strings.TrimSuffix(line, "\n")
	if !regexp.MustCompile(`^127\.0\.0\.1:[0-9]+$`).MatchString(p.addr) {
		t.Fatalf("port %v: first line %q is not 127.0.0.1:PORT", args, line)
	}
	return p
}

// wait waits for the process to exit and returns its status.
func (p *portProc) wait() int {
	<-p.done
	return p.code
}

// listenIn starts an echo server on port in the sandbox (busybox nc, one
// cat per connection) and returns once it listens.
func listenIn(t *testing.T, id, port, hexPort string) {
	t.Helper()
	text, isErr := bashIn(t, id, "nc -ll -p "+port+" -e cat >/dev/null 2>&1 &\n"+
		"i=0; until cat /proc/net/tcp /proc/net/tcp6 | grep -qE ':"+hexPort+" 0+:0000 0A'; do\n"+
		"  i=$((i+1)); [ $i -lt 2000 ] || exit 1; sleep 0.05\n"+
		"done; echo listening")
	if isErr || !strings.Contains(text, "listening") {
		t.Fatalf("echo server: %q", text)
	}
}

// TestDockerPort: `port` forwards host connections into an `up` sandbox
// that has no network: bytes both ways with a half-close, a closed port is
// a closed connection and a line on stderr, an address in use exits 1,
// SIGINT exits 0 with the address as the only stdout line, and the
// sandbox removed ends it with exit 1 and the reason.
func TestDockerPort(t *testing.T) {
	needDocker(t)
	id, downed := piUp(t, "port")
	listenIn(t, id, "8080", "1F90")

	p := startPort(t, "--container", id, "8080")
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	io.WriteString(c, "hello\n")
	if l, err := br.ReadString('\n'); err != nil || l != "hello\n" {
		t.Fatalf("echo: %q, %v", l, err)
	}
	data := make([]byte, 1<<20)
	rand.Read(data)
	go func() {
		c.Write(data)
		c.(*net.TCPConn).CloseWrite()
	}()
	back, err := io.ReadAll(br)
	c.Close()
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("echoed %d bytes (%v), want the %d sent", len(back), err, len(data))
	}

	// Nothing listens on 8081: the client's connection is closed.
	closed := startPort(t, "--container", id, "8081")
	c2, err := net.Dial("tcp", closed.addr)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, c2); n != 0 {
		t.Errorf("a closed port sent %d bytes (%v)", n, err)
	}
	c2.Close()
	closed.cmd.Process.Signal(syscall.SIGINT)
	if code := closed.wait(); code != 0 {
		t.Errorf("SIGINT: exit %d, want 0; stderr %s", code, closed.errs)
	}
	if e := closed.errs.String(); !strings.Contains(e, "127.0.0.1:8081") || !strings.Contains(e, "refused") {
		t.Errorf("stderr %q does not report the refused port", e)
	}

	// The address in use: exit 1.
	if _, errs, code := pi(t, "", "port", "--container", id, "--listen", p.addr, "8080"); code != 1 || !strings.Contains(errs, "in use") {
		t.Errorf("--listen in use: code %d, stderr %s", code, errs)
	}

	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(); code != 0 {
		t.Errorf("SIGINT: exit %d, want 0; stderr %s", code, p.errs)
	}
	if out := p.out.String(); out != "" {
		t.Errorf("stdout after the address: %q", out)
	}

	// The sandbox removed while forwarding: exit 1 with the reason.
	gone := startPort(t, "--container", id, "8080")
	start := time.Now()
	if _, errs, code := pi(t, "", "down", id); code != 0 {
		t.Fatalf("down: %d %s", code, errs)
	}
	*downed = true
	code := gone.wait()
	t.Logf("port ended %v after down returned", time.Since(start).Round(time.Millisecond))
	if e := gone.errs.String(); code != 1 || !strings.Contains(e, "the target is gone") || !(strings.Contains(e, "removed") || strings.Contains(e, "No such container")) {
		t.Errorf("sandbox removed: exit %d, stderr %q; want 1 and the reason", code, gone.errs)
	}
}

// TestRunscPort: the same forward into an `up` sandbox under gVisor,
// whose loopback is its own netstack's.
func TestRunscPort(t *testing.T) {
	image := "pi-sandbox/busybox"
	needRuntime(t, image, runsc)
	purpose := "port-runsc"
	t.Cleanup(func() { checkNoContainers(t, "pi-sandbox.test="+purpose) })
	out, errs, code := pi(t, "", "up", "--image", image, "--runtime", runsc, "--label", runLabel+"="+runID, "--label", "pi-sandbox.test="+purpose)
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 64 {
		t.Fatalf("up: code %d, out %q, err %s", code, out, errs)
	}
	t.Cleanup(func() { pi(t, "", "down", id) })
	listenIn(t, id, "8080", "1F90")
	p := startPort(t, "--container", id, "8080")
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "hello gVisor")
	c.(*net.TCPConn).CloseWrite()
	back, err := io.ReadAll(c)
	c.Close()
	if err != nil || string(back) != "hello gVisor" {
		t.Fatalf("echo: %q, %v", back, err)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(); code != 0 {
		t.Errorf("SIGINT: exit %d; stderr %s", code, p.errs)
	}
}
