package helper_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// TestListenTarget: connections made in the target (this host, for the
// pipe helper) to the listener's address arrive through the helper, each
// with its bytes both ways and a half-close; many at once; Close closes
// the target's port.
func TestListenTarget(t *testing.T) {
	b := open(t)
	tl, ok := b.(ops.TargetListener)
	if !ok {
		t.Fatalf("%T is not an ops.TargetListener", b)
	}
	ln, err := tl.ListenTarget(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
				c.(interface{ CloseWrite() error }).CloseWrite()
			}()
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			want := fmt.Sprintf("connection %d\n", i)
			io.WriteString(c, want)
			got, err := bufio.NewReader(c).ReadString('\n')
			if err != nil || got != want {
				errs <- fmt.Errorf("echo %q, %v; want %q", got, err, want)
				return
			}
			c.(*net.TCPConn).CloseWrite()
			if rest, err := io.ReadAll(c); err != nil || len(rest) != 0 {
				errs <- fmt.Errorf("after the half-close: %q, %v", rest, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ln.Close()
	// The helper closes the port once it sees the request end; a dial
	// may still race that, so it is tried until refused.
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		c.Close()
	}
}
