package sandbox

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"path/filepath"
	"testing"
)

// TestSpliceN: exactly n bytes move from a TCP socket to a unix socket,
// whatever the sender sends after them.
func TestSpliceN(t *testing.T) {
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	ul, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	const n = 5<<20 + 123
	data := make([]byte, n)
	rand.Read(data)
	go func() {
		c, err := net.Dial("tcp", tl.Addr().String())
		if err != nil {
			return
		}
		c.Write(data)
		c.Write([]byte("not part of the body"))
		c.Close()
	}()
	src, err := tl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ul.Accept()
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(c)
		got <- b
	}()
	dst, err := net.Dial("unix", ul.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	moved, err := spliceN(dst.(*net.UnixConn), src.(*net.TCPConn), n)
	dst.Close()
	if err != nil || moved != n {
		t.Fatalf("spliceN = %d, %v; want %d", moved, err, n)
	}
	if b := <-got; !bytes.Equal(b, data) {
		t.Fatalf("received %d bytes, not the %d sent", len(b), n)
	}
}
