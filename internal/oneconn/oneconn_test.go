package oneconn

import (
	"errors"
	"net"
	"testing"
)

func TestListener(t *testing.T) {
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	l := New(c1)
	if c, err := l.Accept(); c != c1 || err != nil {
		t.Fatalf("first Accept = %v, %v", c, err)
	}
	errc := make(chan error)
	go func() { _, err := l.Accept(); errc <- err }()
	l.Close()
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close = %v", err)
	}
	if l.Addr() != c1.LocalAddr() {
		t.Errorf("Addr %v", l.Addr())
	}
}
