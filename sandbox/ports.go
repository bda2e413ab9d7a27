package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"sync"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// The check-then-use confinement keeps ops.TargetDialer: a port is not a
// path.
var _ ops.TargetDialer = (*confined)(nil)

func (c *confined) DialTarget(ctx context.Context, port int) (net.Conn, error) {
	if d, ok := c.b.(ops.TargetDialer); ok {
		return d.DialTarget(ctx, port)
	}
	return nil, ops.ErrUnsupported
}

// Dial connects to 127.0.0.1:port inside the target: the loopback of the
// container's or pod's network namespace (which needs no network of its
// own: the bytes travel over the helper's stream), of an ssh host, or of
// this host for a local sandbox. A port nothing listens on is an error at
// once. Where the connection has CloseWrite (`interface{ CloseWrite()
// error }`), it ends the target's input and the answer can still be read.
func (s *Sandbox) Dial(ctx context.Context, port int) (net.Conn, error) {
	d, ok := s.backend.(ops.TargetDialer)
	if !ok {
		return nil, fmt.Errorf("sandbox: dial: %w: backend %s does not connect into its target", ops.ErrUnsupported, s.backend.Info().Backend)
	}
	return d.DialTarget(ctx, port)
}

// ForwardOptions tunes Forward.
type ForwardOptions struct {
	// OnError, when set, is told each connection that could not be made
	// or ended with an error (a port nothing listens on, say); that client
	// has been given a closed connection.
	OnError func(error)
	// Check is how often the target is checked while forwarding (zero:
	// every second); a target that is gone (a container removed) ends
	// Forward with the reason.
	Check time.Duration
}

// Forward accepts connections on ln and forwards each to 127.0.0.1:port
// inside the target (see Dial), until ctx ends (nil) or the listener
// fails or the target is gone (the reason). It closes ln, and every
// forwarded connection, before it returns.
func (s *Sandbox) Forward(ctx context.Context, ln net.Listener, port int, o ForwardOptions) error {
	if _, ok := s.backend.(ops.TargetDialer); !ok {
		ln.Close()
		return fmt.Errorf("sandbox: forward: %w: backend %s does not connect into its target", ops.ErrUnsupported, s.backend.Info().Backend)
	}
	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
	)
	track := func(c net.Conn, add bool) bool {
		mu.Lock()
		defer mu.Unlock()
		if add {
			if ctx.Err() != nil {
				return false
			}
			conns[c] = struct{}{}
		} else {
			delete(conns, c)
		}
		return true
	}
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.watchTarget(ctx, o.Check, cancel)
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				cancel(fmt.Errorf("sandbox: forward: %w", err))
			}
			break
		}
		if !track(c, true) {
			c.Close()
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer track(c, false)
			// The client's connection is closed after the error is told:
			// a client that sees it closed finds the reason already said.
			defer c.Close()
			if err := s.forwardOne(ctx, c, port); err != nil && o.OnError != nil && ctx.Err() == nil {
				o.OnError(err)
			}
		}()
	}
	cancel(nil)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && parent.Err() == nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// watchTarget checks the target every period until ctx ends, and cancels
// with the reason when a check fails for another cause than the directory
// itself (a path error) or no answer in time (a paused container keeps its
// forward).
func (s *Sandbox) watchTarget(ctx context.Context, period time.Duration, cancel context.CancelCauseFunc) {
	if period <= 0 {
		period = time.Second
	}
	t := time.NewTicker(period)
	defer t.Stop()
	dir := s.backend.Info().WorkDir
	if dir == "" {
		dir = "/"
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, ccancel := context.WithTimeout(ctx, 3*period)
		_, err := s.backend.Stat(cctx, dir)
		timedOut := cctx.Err() != nil
		ccancel()
		var pe *fs.PathError
		if err != nil && !timedOut && ctx.Err() == nil && !errors.As(err, &pe) {
			cancel(fmt.Errorf("sandbox: forward: the target is gone: %w", err))
			return
		}
	}
}

// forwardOne copies between the client c and a new connection to port,
// each direction's end passed on as a half-close. When the dial fails, c
// is left open for the caller to close.
func (s *Sandbox) forwardOne(ctx context.Context, c net.Conn, port int) error {
	t, err := s.Dial(ctx, port)
	if err != nil {
		return err
	}
	defer t.Close()
	// A raw connection's socket itself: TCP to unix socket and back, the
	// kernel splices.
	var tc net.Conn = t
	if r, ok := t.(interface{ RawConn() *net.UnixConn }); ok && r.RawConn() != nil {
		tc = r.RawConn()
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(tc, c)
		if cw, ok := tc.(interface{ CloseWrite() error }); ok && err == nil {
			cw.CloseWrite()
		} else {
			t.Close()
		}
		done <- err
	}()
	_, err = io.Copy(c, tc)
	if cw, ok := c.(interface{ CloseWrite() error }); ok && err == nil {
		cw.CloseWrite()
	}
	// The target's side ended: the client's side has nothing to reach.
	t.Close()
	c.Close()
	<-done
	if err != nil && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
		return fmt.Errorf("sandbox: forward to port %d: %w", port, err)
	}
	return nil
}
