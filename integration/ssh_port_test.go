package integration

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"syscall"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// TestSSHPort: `port --backend ssh` forwards to the ssh host's loopback
// through the helper (the test's sshd runs on this host, so the server is
// the test's own).
func TestSSHPort(t *testing.T) {
	s := sshtest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	p := startPort(t, "--backend", "ssh",
		"--host", s.User+"@"+s.Addr(),
		"--identity", s.IdentityFile,
		"--known-hosts", s.KnownHostsFile,
		"--workdir", s.TempDir(t),
		strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for _, line := range []string{"one\n", "two\n"} {
		io.WriteString(c, line)
		if got, err := br.ReadString('\n'); err != nil || got != line {
			t.Fatalf("echo of %q: %q, %v", line, got, err)
		}
	}
	c.(*net.TCPConn).CloseWrite()
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Errorf("after the half-close: %q, %v", rest, err)
	}
	c.Close()
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(); code != 0 {
		t.Errorf("SIGINT: exit %d; stderr %s", code, p.errs)
	}
}
