package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestPortLocal: locally `port` is a plain TCP proxy to the host's
// 127.0.0.1:PORT; its only stdout line is the address, and the end of its
// context (SIGINT, SIGTERM) is exit 0.
func TestPortLocal(t *testing.T) {
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
	port := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runMain(ctx, []string{"port", "--backend", "local", "--workdir", t.TempDir(), strconv.Itoa(port)}, stdio{strings.NewReader(""), pw, &errb})
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	addr, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("no address line: %v (stderr %s)", err, errb.String())
	}
	c, err := net.Dial("tcp", strings.TrimSpace(addr))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "ping")
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	c.Close()
	if err != nil || string(got) != "ping" {
		t.Errorf("through the proxy: %q, %v", got, err)
	}
	cancel()
	rest, _ := io.ReadAll(br)
	if code := <-done; code != 0 || len(rest) != 0 {
		t.Errorf("interrupted: exit %d, more stdout %q; want 0 and none", code, rest)
	}
}

// TestPortListenPublic: a --listen address that is not loopback is a
// usage error without --listen-public; PORT must be a port number.
func TestPortListenPublic(t *testing.T) {
	for _, args := range [][]string{
		{"port", "--listen", "0.0.0.0:0", "80"},
		{"port", "--listen", ":0", "80"},
		{"port", "0"},
		{"port", "http"},
		{"port"},
	} {
		code, out, errs := run(t, args...)
		if code != 2 || out != "" || !strings.Contains(errs, "Run 'pi-sandbox port -h' for usage") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want a usage error", args, code, out, errs)
		}
	}
	if !loopback("127.0.0.2") || !loopback("::1") || !loopback("localhost") || loopback("0.0.0.0") || loopback("") {
		t.Error("loopback misclassifies")
	}
}
