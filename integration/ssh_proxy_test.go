package integration

import (
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// tcpProxy forwards loopback TCP connections to a target and lets a test
// cut them (as a network failure would) or freeze them (a black hole).
type tcpProxy = sshtest.Proxy

func startProxy(t testing.TB, target string) *tcpProxy {
	t.Helper()
	p, err := sshtest.StartProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
