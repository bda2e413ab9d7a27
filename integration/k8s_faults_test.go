package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
)

// podCount counts the processes in pod whose command line matches the grep
// pattern (write one that does not match itself, like "[s]leep 3011"),
// through a backend of its own (its helper is not the one under test).
func podCount(t *testing.T, pod, pattern string) int {
	t.Helper()
	b := newK8s(t, k8s.Config{Pod: pod}, "count")
	var out bytes.Buffer
	cmd := `for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '` + pattern + `' || true`
	if err := b.Run(t.Context(), &ops.Cmd{Command: cmd, Output: &out}); err != nil {
		t.Fatalf("count processes: %v", err)
	}
	n := 0
	for _, c := range strings.TrimSpace(out.String()) {
		n = n*10 + int(c-'0')
	}
	return n
}

// waitNoneInPod polls podCount until it is 0 or d has passed, and returns
// how long that took.
func waitNoneInPod(t *testing.T, pod, pattern string, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		n := podCount(t, pod, pattern)
		if n == 0 {
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("%d processes matching %q still alive %s later", n, pattern, d)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// treeCmd leaves a background process, a setsid escapee and a foreground
// sleep, all matching "[s]leep N", then prints "started".
func treeCmd(n string) string {
	return "sleep " + n + " & setsid sleep " + n + " & echo started; sleep " + n
}

// startTree runs treeCmd in the background and waits for its marker.
func startTree(t *testing.T, ctx context.Context, b ops.Backend, n string) <-chan error {
	t.Helper()
	m := newMarkWriter("started")
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, &ops.Cmd{Command: treeCmd(n), Output: m}) }()
	select {
	case <-m.seen:
	case err := <-done:
		t.Fatalf("tree command ended early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("tree command did not start")
	}
	return done
}

// TestK8sCloseLeavesNothing: Close ends every process the backend started
// in an existing pod, background and setsid escapees included.
func TestK8sCloseLeavesNothing(t *testing.T) {
	pod := plainPod(t, k8sBusybox, "close")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	b, err := k8s.New(ctx, k8sCfg(k8s.Config{Pod: pod}, "close"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Run(ctx, &ops.Cmd{Command: "sleep 3011 >/dev/null 2>&1 & setsid sleep 3011 >/dev/null 2>&1 & true"}); err != nil {
		t.Fatal(err)
	}
	done := startTree(t, ctx, b, "3011")
	if n := podCount(t, pod, "[s]leep 3011"); n < 5 {
		t.Errorf("%d processes before Close, want at least 5", n)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-done; err == nil {
		t.Error("the running command succeeded across Close")
	}
	if n := podCount(t, pod, "[s]leep 3011"); n != 0 {
		t.Errorf("%d processes left right after Close, want 0", n)
	}
}

// TestK8sPodDeletedMidCommand: deleting the pod under a running command
// fails the call within 5 s, with a transport error naming the pod.
func TestK8sPodDeletedMidCommand(t *testing.T) {
	c := needCluster(t)
	b := newK8s(t, k8s.Config{Image: k8sBusybox}, "deleted")
	done := startTree(t, t.Context(), b, "3012")
	zero := int64(0)
	start := time.Now()
	if err := clientset(t, c).CoreV1().Pods(c.Namespace).Delete(t.Context(), b.Pod(), metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		d := time.Since(start)
		t.Logf("call ended %s after the delete: %v", d.Round(time.Millisecond), err)
		if err == nil || !errors.Is(err, ops.ErrTransport) {
			t.Errorf("Run = %v, want a transport error", err)
		}
		if d > 5*time.Second {
			t.Errorf("the call ended %s after the delete, want < 5s", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call is still running 10 s after the pod was deleted")
	}
	if err := b.Run(t.Context(), &ops.Cmd{Command: "true"}); err == nil {
		t.Error("a call on the deleted pod succeeded")
	}
}

// cutProxy forwards TCP to the API server; Cut drops every connection, as
// an API server restart (or a load balancer) would.
type cutProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	conns  []net.Conn
	frozen chan struct{} // non-nil: closed when the freeze ends
}

// copy forwards src to dst, holding every chunk while frozen.
func (p *cutProxy) copy(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		f := p.frozen
		p.mu.Unlock()
		if f != nil {
			<-f
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Freeze stops forwarding without closing anything (a silent partition:
// no FIN, no RST) until the returned function is called.
func (p *cutProxy) Freeze() func() {
	f := make(chan struct{})
	p.mu.Lock()
	p.frozen = f
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.frozen = nil
		p.mu.Unlock()
		close(f)
	}
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		if p.frozen != nil {
			close(p.frozen)
			p.frozen = nil
		}
		p.mu.Unlock()
		p.Cut()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go p.copy(u, c)
			go p.copy(c, u)
		}
	}()
	return p
}

func (p *cutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestK8sStreamCut: when every connection to the API server drops (an API
// server restart, a proxy), the call in flight fails with a transport
// error, the next call works (a new helper), and the cut call's tree is
// gone: the new helper's exec ended the old helper first.
func TestK8sStreamCut(t *testing.T) {
	pod := plainPod(t, k8sBusybox, "cut")
	b, p := proxied(t, pod, 0)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	done := startTree(t, ctx, b, "3013")
	p.Cut()
	select {
	case err := <-done:
		if !errors.Is(err, ops.ErrTransport) {
			t.Errorf("Run across the cut = %v, want a transport error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call is still running 20 s after the cut")
	}
	var out bytes.Buffer
	if err := b.Run(ctx, &ops.Cmd{Command: "echo after", Output: &out}); err != nil || out.String() != "after\n" {
		t.Fatalf("Run after the cut = %v, output %q", err, out.String())
	}
	if n := podCount(t, pod, "[s]leep 3013"); n != 0 {
		t.Errorf("%d processes of the cut call left after the redial, want 0", n)
	}
}

// proxied opens a backend on pod through a proxy to the API server.
func proxied(t *testing.T, pod string, lease time.Duration) (*k8s.Backend, *cutProxy) {
	c := needCluster(t)
	u, err := url.Parse(c.REST.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := newCutProxy(t, u.Host)
	rc := *c.REST
	rc.Host = "https://" + p.ln.Addr().String()
	rc.TLSClientConfig.ServerName = u.Hostname()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	b, err := k8s.New(ctx, k8sCfg(k8s.Config{Pod: pod, REST: &rc, Namespace: c.Namespace, Lease: lease}, "proxied"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, p
}

// TestK8sSilentPartition: when the connection to the API server goes
// silent (nothing closed: no FIN reaches anyone), the call fails on the
// client's unanswered pings, and the helper in the pod, hearing nothing,
// ends every tree once its lease runs out.
func TestK8sSilentPartition(t *testing.T) {
	pod := plainPod(t, k8sBusybox, "partition")
	b, p := proxied(t, pod, crashLease)
	done := startTree(t, t.Context(), b, "3015")
	start := time.Now()
	thaw := p.Freeze()
	defer thaw()
	select {
	case err := <-done:
		t.Logf("the call failed %s into the partition: %v", time.Since(start).Round(100*time.Millisecond), err)
		if !errors.Is(err, ops.ErrTransport) {
			t.Errorf("Run across the partition = %v, want a transport error", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("the call is still running 40 s into the partition")
	}
	waitNoneInPod(t, pod, "[s]leep 3015", crashLease+20*time.Second)
	t.Logf("the tree was gone %s into the partition (lease %s)", time.Since(start).Round(100*time.Millisecond), crashLease)
}

// TestK8sCrashedClient: a client killed mid-command (SIGKILL: no Close, no
// second exec) leaves nothing running once its helper's lease has run
// out, setsid escapees included.
func TestK8sCrashedClient(t *testing.T) {
	if pod := os.Getenv("PI_SANDBOX_K8S_CRASH_POD"); pod != "" {
		crashChild(t, pod)
		return
	}
	needCluster(t)
	pod := plainPod(t, k8sBusybox, "crash")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestK8sCrashedClient$", "-test.v")
	cmd.Env = append(os.Environ(), "PI_SANDBOX_K8S_CRASH_POD="+pod, "KUBECONFIG="+k8sConfig, "PI_SANDBOX_BIN="+piBin)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := newMarkWriter("started")
	go io.Copy(m, out)
	select {
	case <-m.seen:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the child never started its command")
	}
	if n := podCount(t, pod, "[s]leep 3014"); n < 3 {
		t.Errorf("%d processes before the crash, want at least 3", n)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	d := waitNoneInPod(t, pod, "[s]leep 3014", crashLease+15*time.Second)
	t.Logf("the tree was gone %s after the client died (lease %s)", d.Round(100*time.Millisecond), crashLease)
}

const crashLease = 15 * time.Second

// crashChild starts the tree in pod and waits to be killed.
func crashChild(t *testing.T, pod string) {
	b, err := k8s.New(t.Context(), k8sCfg(k8s.Config{Pod: pod, Kubeconfig: os.Getenv("KUBECONFIG"), Lease: crashLease}, "crash"))
	if err != nil {
		t.Fatal(err)
	}
	b.Run(t.Context(), &ops.Cmd{Command: treeCmd("3014"), Output: os.Stdout})
}

// markWriter closes seen once text has been written.
type markWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	text string
	seen chan struct{}
	once sync.Once
}

func newMarkWriter(text string) *markWriter {
	return &markWriter{text: text, seen: make(chan struct{})}
}

func (m *markWriter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.buf.Write(p)
	if bytes.Contains(m.buf.Bytes(), []byte(m.text)) {
		m.once.Do(func() { close(m.seen) })
	}
	return len(p), nil
}

// TestK8sOOMKilled: a command killed by the pod's OOM killer is reported as
// such, not as a plain SIGKILL (the helper reads the cgroup's counter).
func TestK8sOOMKilled(t *testing.T) {
	b := newK8s(t, k8s.Config{Image: k8sBusybox, Memory: 96 << 20}, "oom")
	err := b.Run(t.Context(), &ops.Cmd{Command: `a=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; while :; do a=$a$a; done`, Timeout: time.Minute})
	var ee *ops.ExitError
	if !errors.As(err, &ee) || !ee.OOMKilled || ee.Code != 137 {
		t.Fatalf("Run = %v, want an ExitError with OOMKilled and code 137", err)
	}
	var out bytes.Buffer
	if err := b.Run(t.Context(), &ops.Cmd{Command: "echo alive", Output: &out}); err != nil || out.String() != "alive\n" {
		t.Errorf("after the OOM kill: %v, %q", err, out.String())
	}
}

// TestK8sOOMNoteSurvivingShell (17.13): a process of the command dies of
// the pod's OOM killer while the shell exits 0: the output ends with the
// out-of-memory note.
func TestK8sOOMNoteSurvivingShell(t *testing.T) {
	b := newK8s(t, k8s.Config{Image: k8sBusybox, Memory: 96 << 20}, "oomnote")
	var out strings.Builder
	err := b.Run(t.Context(), &ops.Cmd{Command: `(a=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; while :; do a=$a$a; done); echo survived`, Output: &out, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("Run = %v (output %q)", err, out.String())
	}
	if !strings.Contains(out.String(), "survived") || !strings.HasSuffix(out.String(), ops.OOMNote) {
		t.Fatalf("output %q: want the shell's last line and the out-of-memory note at the end", out.String())
	}
}
