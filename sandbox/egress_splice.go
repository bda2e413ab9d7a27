package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strconv"
)

// spliceBody writes resp to c with its body moved from the upstream
// socket to c's by the kernel (spliceN), when both are sockets of this
// host (c a raw connection of a helper's host socket, up a TCP
// connection) and the body has a length; false, with nothing written,
// otherwise (the caller writes resp). The head is resp's as resp.Write
// writes it; the body bytes br read already go first. What the upstream
// sends is counted in up.
func spliceBody(c net.Conn, req *http.Request, resp *http.Response, br *bufio.Reader, up *countConn) bool {
	n := resp.ContentLength
	if n <= 0 || len(resp.TransferEncoding) > 0 || req.Method == http.MethodHead || !canSplice {
		return false
	}
	var dst *net.UnixConn
	switch v := c.(type) {
	case *net.UnixConn:
		dst = v
	case interface{ Socket() *net.UnixConn }:
		dst = v.Socket()
	}
	src, ok := up.Conn.(*net.TCPConn)
	if dst == nil || !ok {
		return false
	}
	var head bytes.Buffer
	fmt.Fprintf(&head, "HTTP/%d.%d %s\r\n", resp.ProtoMajor, resp.ProtoMinor, resp.Status)
	h := resp.Header.Clone()
	h.Del("Connection")
	h.Set("Connection", "close")
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	h.Write(&head)
	head.WriteString("\r\n")
	buffered := min(int64(br.Buffered()), n)
	if buffered > 0 {
		b, _ := br.Peek(int(buffered))
		head.Write(b)
	}
	if _, err := dst.Write(head.Bytes()); err != nil {
		return true // the client is gone: nothing more to send
	}
	moved, _ := spliceN(dst, src, n-buffered)
	up.in.Add(moved)
	return true
}
