package helper_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// listen starts a server on 127.0.0.1 (the target of the pipe helper is
// this host) that runs serve on each connection, and returns its port.
func listen(t *testing.T, serve func(net.Conn)) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func echo(c net.Conn) { io.Copy(c, c) }

func dialer(t *testing.T, b ops.Backend) ops.TargetDialer {
	d, ok := b.(ops.TargetDialer)
	if !ok {
		t.Fatalf("%T is not an ops.TargetDialer", b)
	}
	return d
}

// TestDialEcho: bytes cross both ways at once, in both directions' full
// size, and a line is answered before the next is written (each write is
// flushed: interactive protocols work).
func TestDialEcho(t *testing.T) {
	port := listen(t, echo)
	c, err := dialer(t, open(t)).DialTarget(t.Context(), port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i := range 3 {
		fmt.Fprintf(c, "line %d\n", i)
		got, err := br.ReadString('\n')
		if err != nil || got != fmt.Sprintf("line %d\n", i) {
			t.Fatalf("echo of line %d = %q, %v", i, got, err)
		}
	}
	data := make([]byte, 4<<20)
	rand.Read(data)
	go func() {
		c.Write(data)
		c.(interface{ CloseWrite() error }).CloseWrite()
	}()
	back, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, data) {
		t.Fatalf("echoed %d bytes, not the %d sent", len(back), len(data))
	}
}

// TestDialExactBuffers: a target that sends whole multiples of the relay's
// read buffer and then waits for an answer is not left waiting: what a
// read that filled the buffer took goes on without a flush of its own.
func TestDialExactBuffers(t *testing.T) {
	for _, size := range []int{256 << 10, 512 << 10} {
		port := listen(t, func(c net.Conn) {
			c.Write(make([]byte, size))
			ack := make([]byte, 3)
			if _, err := io.ReadFull(c, ack); err == nil {
				c.Write(ack)
			}
		})
		c, err := dialer(t, open(t)).DialTarget(t.Context(), port)
		if err != nil {
			t.Fatal(err)
		}
		// A stalled relay fails the test (the connection closed) rather
		// than hanging it.
		stall := time.AfterFunc(time.Minute, func() { c.Close() })
		if _, err := io.ReadFull(c, make([]byte, size)); err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		io.WriteString(c, "ack")
		got := make([]byte, 3)
		if _, err := io.ReadFull(c, got); err != nil || string(got) != "ack" {
			t.Fatalf("after %d bytes: %q, %v", size, got, err)
		}
		stall.Stop()
		c.Close()
	}
}

// TestDialHalfClose: the end of what the client sends reaches the target
// as EOF, and the target's answer after it still arrives.
func TestDialHalfClose(t *testing.T) {
	port := listen(t, func(c net.Conn) {
		in, _ := io.ReadAll(c)
		fmt.Fprintf(c, "%d:%s", len(in), in)
	})
	c, err := dialer(t, open(t)).DialTarget(t.Context(), port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "hello")
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "5:hello" {
		t.Fatalf("answer = %q, %v; want 5:hello", got, err)
	}
}

// TestDialRefused: a port nothing listens on is an error naming it, not a
// connection that hangs.
func TestDialRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	b := open(t)
	c, err := dialer(t, b).DialTarget(t.Context(), port)
	if err == nil {
		c.Close()
		t.Fatal("dialled a closed port")
	}
	if !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), fmt.Sprint(port)) {
		t.Errorf("error %q names neither the refusal nor the port", err)
	}
	// The stream is fine: the next call works.
	if _, err := b.Stat(t.Context(), "/"); err != nil {
		t.Errorf("Stat after a refused dial: %v", err)
	}
	if _, err := dialer(t, b).DialTarget(t.Context(), 0); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("port 0: %v", err)
	}
}

// TestDialParallel: many connections at once on one helper stream, each
// with its own bytes.
func TestDialParallel(t *testing.T) {
	port := listen(t, echo)
	d := dialer(t, open(t))
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := d.DialTarget(t.Context(), port)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			msg := bytes.Repeat([]byte{byte(i)}, 64<<10)
			go func() {
				c.Write(msg)
				c.(interface{ CloseWrite() error }).CloseWrite()
			}()
			back, err := io.ReadAll(c)
			if err != nil || !bytes.Equal(back, msg) {
				errs <- fmt.Errorf("connection %d: %d bytes back, %v", i, len(back), err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDialBound: past Config.MaxConnections a dial fails at once, and a
// closed connection gives its place back.
func TestDialBound(t *testing.T) {
	port := listen(t, echo)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := helper.New(t.Context(), helper.Config{
		Name:           "pipe",
		Dial:           helper.ExecDial(exe, append(os.Environ(), shimEnvExtra)),
		Hello:          proto.Hello{WorkDir: proto.Str(t.TempDir()), SpillDir: proto.Str(t.TempDir())},
		MaxConnections: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var open []net.Conn
	for range 2 {
		c, err := b.DialTarget(t.Context(), port)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}
	if c, err := b.DialTarget(t.Context(), port); err == nil {
		c.Close()
		t.Fatal("a third connection over a bound of 2")
	}
	open[0].Close()
	c, err := b.DialTarget(t.Context(), port)
	if err != nil {
		t.Fatalf("after a close: %v", err)
	}
	c.Close()
	open[1].Close()
}
