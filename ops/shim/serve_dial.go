package shim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// dialBuffer is the most read from the target's connection before it is
// sent on as one DATA frame (the size of a command's output frames).
const dialBuffer = 256 << 10

// handleDial connects to 127.0.0.1:PORT in the target and relays both
// ways: the request body to the connection (its end half-closes it), the
// connection to the reply body, flushed whenever a read returns all there
// was, so interactive protocols work. The reply ends when the target's side does, or when the
// client goes away.
func (s *server) handleDial(w http.ResponseWriter, r *http.Request) {
	var req proto.DialRequest
	if err := json.Unmarshal([]byte(r.Header.Get(proto.HeaderRequest)), &req); err != nil {
		replyErr(w, fmt.Errorf("shim: bad request: %w", err))
		return
	}
	if req.Port < 1 || req.Port > 65535 {
		replyErr(w, fmt.Errorf("shim: dial: port %d out of range", req.Port))
		return
	}
	var d net.Dialer
	c, err := d.DialContext(r.Context(), "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(req.Port)))
	if err != nil {
		replyErr(w, fmt.Errorf("shim: dial 127.0.0.1:%d: %w", req.Port, unwrapOp(err)))
		return
	}
	relayConn(w, r, c)
}

// relayConn relays between c and the stream of r: the request body to c
// (its end half-closes c), c to the reply body, flushed whenever a read
// returns all there was, so interactive protocols work. It closes c when either side ends.
func relayConn(w http.ResponseWriter, r *http.Request, c net.Conn) {
	defer c.Close()
	// The client went away (or the session ended): the connection closes
	// and the copies below end.
	stop := context.AfterFunc(r.Context(), func() { c.Close() })
	defer stop()

	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	go func() {
		// In large writes: TCPConn's ReadFrom would copy 32 KiB at a time.
		_, err := io.CopyBuffer(struct{ io.Writer }{c}, r.Body, make([]byte, dialBuffer))
		if err != nil {
			c.Close()
			return
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	// A read that filled the buffer has more behind it: it goes on
	// without a flush of its own, so a bulk transfer crosses in large
	// frames; any shorter read (all there was) is flushed at once.
	buf := make([]byte, dialBuffer)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if n < len(buf) && rc.Flush() != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// unwrapOp drops the *net.OpError's addresses (the message names them
// already): "connection refused" rather than "dial tcp 127.0.0.1:N: connect:
// connection refused".
func unwrapOp(err error) error {
	if oe, ok := err.(*net.OpError); ok && oe.Err != nil {
		return oe.Err
	}
	return err
}
