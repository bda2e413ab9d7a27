package helper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// DefaultMaxConnections bounds the connections open through one helper
// stream (Config.MaxConnections).
const DefaultMaxConnections = 256

var _ ops.TargetDialer = (*Client)(nil)

// DialTarget connects to 127.0.0.1:port inside the target through the
// helper: one HTTP/2 stream of the helper's connection carries the TCP
// connection's bytes both ways, with the stream's flow control. A refused
// port is an error at once. The connection does not take a place among
// the calls in flight (Config.MaxInFlight) but one among
// Config.MaxConnections; with none left, DialTarget fails.
func (cl *Client) DialTarget(ctx context.Context, port int) (net.Conn, error) {
	c := cl.c
	if port < 1 || port > 65535 {
		return nil, c.errorf("dial: %w: port %d out of range", ops.ErrConfig, port)
	}
	select {
	case c.dials <- struct{}{}:
	default:
		return nil, c.errorf("dial 127.0.0.1:%d: %d connections open, the most allowed", port, cap(c.dials))
	}
	release := sync.OnceFunc(func() { <-c.dials })
	if rc, ok, err := c.rawDial(ctx, fmt.Sprintf("dial %d", port)); ok {
		if err != nil {
			release()
			return nil, err
		}
		return c.keepRaw(rc, release, port)
	}
	s, err := c.session(ctx)
	if err != nil {
		release()
		return nil, err
	}
	hdr, _ := json.Marshal(proto.DialRequest{Port: port})
	// The connection outlives ctx, which bounds only the dial.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopDial := context.AfterFunc(ctx, cancel)
	pr, pw := io.Pipe()
	resp, err := s.roundTrip(sctx, c, proto.PathDial, string(hdr), pr)
	if !stopDial() && err == nil {
		resp.Body.Close()
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		pw.Close()
		release()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		err := replyError(resp, nil)
		cancel()
		pw.Close()
		release()
		return nil, c.errorf("%w", err)
	}
	return &dialConn{body: resp.Body, pw: pw, cancel: cancel, release: release, port: port}, nil
}

// dialConn is a connection in the target over one helper stream.
type dialConn struct {
	body     io.ReadCloser  // the target's bytes
	pw       *io.PipeWriter // the request body: bytes to the target
	cancel   context.CancelFunc
	release  func()
	port     int
	once     sync.Once
	isClosed atomic.Bool
}

func (d *dialConn) Read(p []byte) (int, error) {
	n, err := d.body.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && d.closed() {
		err = net.ErrClosed
	}
	return n, err
}

func (d *dialConn) Write(p []byte) (int, error) {
	n, err := d.pw.Write(p)
	if err != nil {
		if d.closed() {
			return n, net.ErrClosed
		}
		return n, fmt.Errorf("helper: dial 127.0.0.1:%d: write: %w", d.port, err)
	}
	return n, nil
}

// ReadFrom copies r to the target in writes of up to copyChunk bytes
// (io.Copy's 32 KiB buffer would cut the stream into as many frames).
func (d *dialConn) ReadFrom(r io.Reader) (int64, error) {
	// Neither side's own copy: r's WriteTo would use 32 KiB again.
	return io.CopyBuffer(struct{ io.Writer }{d}, struct{ io.Reader }{r}, make([]byte, copyChunk))
}

// copyChunk is the most a dialConn's ReadFrom writes at once.
const copyChunk = 256 << 10

// CloseWrite ends the request body: the helper half-closes the target's
// connection, whose answer can still be read.
func (d *dialConn) CloseWrite() error { return d.pw.Close() }

// Close ends the stream both ways.
func (d *dialConn) Close() error {
	d.once.Do(func() {
		d.isClosed.Store(true)
		d.pw.CloseWithError(net.ErrClosed)
		d.cancel()
		d.body.Close()
		d.release()
	})
	return nil
}

func (d *dialConn) closed() bool { return d.isClosed.Load() }

func (d *dialConn) LocalAddr() net.Addr { return addr{} }
func (d *dialConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: d.port}
}

// Deadlines are not supported: a stream of the helper has none.
func (d *dialConn) SetDeadline(t time.Time) error      { return os.ErrNoDeadline }
func (d *dialConn) SetReadDeadline(t time.Time) error  { return os.ErrNoDeadline }
func (d *dialConn) SetWriteDeadline(t time.Time) error { return os.ErrNoDeadline }

// rawDial opens a raw connection for op (Config.RawDial); ok is false
// when the caller is to use a stream of the session instead (no raw
// dialer, or it failed short of the daemon's answer).
func (c *conn) rawDial(ctx context.Context, op string) (_ net.Conn, ok bool, _ error) {
	if c.cfg.RawDial == nil {
		return nil, false, nil
	}
	rc, err := c.cfg.RawDial(ctx, op)
	var re *shim.RawError
	switch {
	case err == nil:
		return rc, true, nil
	case errors.As(err, &re):
		return nil, true, c.errorf("%s", re.Msg)
	}
	return nil, false, nil
}

// keepRaw records rc among the client's raw connections (Close closes
// them); release gives back its place among the connections when it is
// closed.
func (c *conn) keepRaw(rc net.Conn, release func(), port int) (net.Conn, error) {
	r := &rawConn{Conn: rc}
	r.release = func() {
		c.mu.Lock()
		delete(c.raws, r)
		c.mu.Unlock()
		release()
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		r.Close()
		return nil, c.errorf("dial 127.0.0.1:%d: %w: the client is closed", port, ops.ErrTransport)
	}
	if c.raws == nil {
		c.raws = map[*rawConn]bool{}
	}
	c.raws[r] = true
	c.mu.Unlock()
	return r, nil
}

// rawConn is a raw connection to the target (Config.RawDial), which
// gives back its place among the connections when closed.
type rawConn struct {
	net.Conn
	release func()
	once    sync.Once
}

// RawConn is the connection's socket, for copies the kernel can splice
// (close the rawConn, not it); nil when some of its bytes were read
// already.
func (r *rawConn) RawConn() *net.UnixConn {
	u, _ := r.Conn.(*net.UnixConn)
	return u
}

// CloseWrite half-closes the connection.
func (r *rawConn) CloseWrite() error {
	if cw, ok := r.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return r.Conn.Close()
}

func (r *rawConn) Close() error {
	err := r.Conn.Close()
	r.once.Do(r.release)
	return err
}
