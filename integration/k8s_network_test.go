package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// TestK8sNetwork: checkNetwork on a pod, then `port --backend k8s`
// forwards a host connection to the echo server it left in the pod.
func TestK8sNetwork(t *testing.T) {
	pod := upPod(t, k8sBusybox, "network")
	checkNetwork(t, newK8s(t, k8s.Config{Pod: pod}, "network"))
	p := startPort(t, "--backend", "k8s", "--kubeconfig", k8sConfig, "--pod", pod, "8080")
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	echoLines(t, c)
	c.Close()
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(); code != 0 {
		t.Errorf("SIGINT: exit %d; stderr %s", code, p.errs)
	}
}

// checkNetwork: in a sandbox on b (a target with no network), a command
// reaches a host-side server through its session's egress proxy with the
// header an inject rule adds outside the target (the value redacted from
// the result, absent from the command's environment); the metadata
// address gets the policy's 403; Sandbox.Dial reaches an echo server the
// command started on the target's port 8080 (left running).
func checkNetwork(t *testing.T, b ops.Backend) {
	t.Helper()
	const secret = "tok-net-inject-52c7e1"
	addr, seen := injectServer(t, secret)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sb, err := sandbox.OpenBackend(ctx, b, sandbox.Config{Policy: sandbox.Policy{Network: sandbox.NetworkPolicy{
		Allow:  []string{"example.com"},
		Inject: []sandbox.InjectRule{{Host: addr, Header: "Authorization", Value: "Bearer ${PI_TEST_INJECT_TOKEN}"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	bash := sandboxBash(t, ctx, sb)
	text := bash(`NO_PROXY= no_proxy= wget -q -O - http://` + addr + `/x; echo; env | grep -c PI_TEST_INJECT_TOKEN; true`)
	if !strings.Contains(text, "you sent [REDACTED]") || strings.Contains(text, secret) || !strings.Contains(text, "\n0") {
		t.Errorf("through the proxy: %q", text)
	}
	select {
	case got := <-seen:
		if got != "Bearer "+secret {
			t.Errorf("the server saw Authorization %q", got)
		}
	default:
		t.Error("the host-side server saw no request")
	}
	text = bash(`p=${HTTP_PROXY#http://}; nc ${p%:*} ${p##*:} -e sh -c 'printf "GET http://169.254.169.254/ HTTP/1.0\r\n\r\n"; cat >&2' 2>&1`)
	if !strings.Contains(text, "403 Forbidden") || !strings.Contains(text, "egress to 169.254.169.254:80 denied by policy") {
		t.Errorf("the metadata address: %q", text)
	}

	// port: an echo server started in the pod, reached from the host.
	text = bash("nc -ll -p 8080 -e cat >/dev/null 2>&1 &\n" +
		"i=0; until cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -qE ':1F90 0+:0000 0A'; do\n" +
		"  i=$((i+1)); [ $i -lt 2000 ] || exit 1; sleep 0.05\n" +
		"done; echo listening")
	if !strings.Contains(text, "listening") {
		t.Fatalf("echo server: %q", text)
	}
	c, err := sb.Dial(ctx, 8080)
	if err != nil {
		t.Fatal(err)
	}
	echoLines(t, c)
	c.Close()
}

// echoLines checks that c echoes lines back.
func echoLines(t *testing.T, c net.Conn) {
	t.Helper()
	br := bufio.NewReader(c)
	for i := range 3 {
		line := fmt.Sprintf("line %d\n", i)
		io.WriteString(c, line)
		if got, err := br.ReadString('\n'); err != nil || got != line {
			t.Fatalf("echo of %q: %q, %v", line, got, err)
		}
	}
}
