package shim

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Raw connections of the host's socket (HostDir): a client on the host
// that sends an operation after its nonce ("NONCE dial PORT", "NONCE
// egress LISTENER CONN") gets, after the daemon's first line, one line of
// answer ("ok", or "error: WHY") and then the bytes of one TCP connection
// in the target both ways — a connection to 127.0.0.1:PORT, or one that an
// egress listener of any session of this daemon accepted — with no HTTP/2
// framing in between. Each direction's end is passed on as a half-close.

// rawDialWait bounds a raw dial in the target.
const rawDialWait = 10 * time.Second

// egressStates are the egress states of every session of this process
// by listener id, for a raw connection's claim.
var egressStates sync.Map // int64 → *egressState

// serveRaw answers op on c and relays; it returns when both directions
// have ended.
func serveRaw(c *net.UnixConn, op string) {
	t, err := rawTarget(op)
	if err != nil {
		fmt.Fprintf(c, "error: %v\n", err)
		return
	}
	defer t.Close()
	if _, err := io.WriteString(c, "ok\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// TCP and unix stream sockets: the kernel splices.
		_, err := io.Copy(t, c)
		if tc, ok := t.(*net.TCPConn); ok && err == nil {
			tc.CloseWrite()
		} else {
			t.Close()
		}
	}()
	_, err = io.Copy(c, t)
	if err == nil {
		c.CloseWrite()
	} else {
		c.Close()
	}
	<-done
}

// rawTarget is the target's connection of op.
func rawTarget(op string) (net.Conn, error) {
	f := strings.Fields(op)
	switch {
	case len(f) == 2 && f[0] == "dial":
		port, err := strconv.Atoi(f[1])
		if err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("shim: dial: port %q out of range", f[1])
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), rawDialWait)
		if err != nil {
			return nil, fmt.Errorf("shim: dial 127.0.0.1:%d: %w", port, unwrapOp(err))
		}
		return c, nil
	case len(f) == 3 && f[0] == "egress":
		id, err1 := strconv.ParseInt(f[1], 10, 64)
		n, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("shim: egress: bad connection %q", op)
		}
		var p *pendingConn
		if e, ok := egressStates.Load(id); ok {
			p = e.(*egressState).take(id, n)
		}
		if p == nil {
			return nil, fmt.Errorf("shim: egress: no connection %d waiting on listener %d (closed, or claimed already)", n, id)
		}
		return p.c, nil
	}
	return nil, fmt.Errorf("shim: unknown raw operation %.40q", op)
}
