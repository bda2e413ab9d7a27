package sshops

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// conn is one SSH connection of the pool.
type conn struct {
	client *ssh.Client
	inUse  int // sessions open or being opened, the SFTP one included
	limit  int // lowered when the server refuses a session (MaxSessions)
	dead   chan struct{}
	sftp   *sftp.Client
}

func (c *conn) isDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// pool multiplexes sessions over as few connections as the server allows,
// dialling another connection (one at a time, so sshd's MaxStartups is not
// hit) only when every connection is saturated.
type pool struct {
	name      string
	dial      func(context.Context) (*ssh.Client, error) // nil: cannot reconnect
	maxPer    int
	maxConns  int
	keepAlive time.Duration

	mu      sync.Mutex
	conns   []*conn
	dialing bool
	changed chan struct{} // closed and replaced on every change of the above
	closed  bool
	done    chan struct{} // closed by close: stops the keepalives
	sftpMu  sync.Mutex
}

func newPool(name string, dial func(context.Context) (*ssh.Client, error), cfg Config) *pool {
	return &pool{
		name: name, dial: dial,
		maxPer: cfg.MaxSessionsPerConn, maxConns: cfg.MaxConns, keepAlive: cfg.KeepAlive,
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
}

func (p *pool) transportErr(what string, err error) error {
	if err == nil {
		return fmt.Errorf("sshops: %s: connection to %s lost: %w", what, p.name, ops.ErrTransport)
	}
	return fmt.Errorf("sshops: %s: connection to %s lost: %w: %w", what, p.name, ops.ErrTransport, err)
}

// notifyLocked wakes every waiter. p.mu must be held.
func (p *pool) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// add registers a connected client and watches it.
func (p *pool) add(client *ssh.Client) *conn {
	c := &conn{client: client, limit: p.maxPer, dead: make(chan struct{})}
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.notifyLocked()
	p.mu.Unlock()
	go func() {
		client.Wait()
		p.mu.Lock()
		close(c.dead)
		for i, x := range p.conns {
			if x == c {
				p.conns = append(p.conns[:i:i], p.conns[i+1:]...)
				break
			}
		}
		p.notifyLocked()
		p.mu.Unlock()
	}()
	go p.keepalive(c)
	return c
}

// keepalive closes c after three keepalive intervals without a reply, which
// unblocks everything waiting on it.
func (p *pool) keepalive(c *conn) {
	t := time.NewTicker(p.keepAlive)
	defer t.Stop()
	replied := make(chan struct{}, 1)
	pending, misses := false, 0
	for {
		select {
		case <-c.dead:
			return
		case <-p.done:
			return
		case <-replied:
			pending, misses = false, 0
		case <-t.C:
			if pending {
				misses++
				if misses >= 3 {
					c.client.Close()
					return
				}
				continue
			}
			pending = true
			go func() {
				if _, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil); err == nil {
					replied <- struct{}{}
				}
			}()
		}
	}
}

// acquire reserves a session slot, dialling a connection when none has a free
// slot and the pool may grow.
func (p *pool) acquire(ctx context.Context) (*conn, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, fmt.Errorf("sshops: backend closed: %w", ops.ErrTransport)
		}
		var best *conn
		for _, c := range p.conns {
			if c.inUse < c.limit && !c.isDead() && (best == nil || c.inUse < best.inUse) {
				best = c
			}
		}
		if best != nil {
			best.inUse++
			p.mu.Unlock()
			return best, nil
		}
		canDial := p.dial != nil && !p.dialing && len(p.conns) < p.maxConns
		if canDial {
			p.dialing = true
			p.mu.Unlock()
			client, err := p.dial(ctx)
			p.mu.Lock()
			p.dialing = false
			p.notifyLocked()
			p.mu.Unlock()
			if err != nil {
				return nil, err
			}
			p.add(client)
			continue
		}
		if p.dial == nil && len(p.conns) == 0 {
			p.mu.Unlock()
			return nil, p.transportErr("open session", nil)
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("sshops: waiting for a session: %w", context.Cause(ctx))
		}
	}
}

// waitDead reports whether c is dead or dies within d: after an error the
// connection watcher may not have noticed yet.
func (p *pool) waitDead(c *conn, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.dead:
		return true
	case <-t.C:
		return false
	}
}

func (p *pool) release(c *conn) {
	p.mu.Lock()
	c.inUse--
	p.notifyLocked()
	p.mu.Unlock()
}

// session opens a session on some connection; release must be called once
// the session is closed.
func (p *pool) session(ctx context.Context) (*ssh.Session, *conn, error) {
	for {
		c, err := p.acquire(ctx)
		if err != nil {
			return nil, nil, err
		}
		s, err := newSession(ctx, c.client)
		if err == nil {
			return s, c, nil
		}
		var oce *ssh.OpenChannelError
		switch {
		case errors.As(err, &oce) && oce.Reason == ssh.ConnectionFailed:
			// sshd's MaxSessions: this connection is full at its current
			// count; use or open another.
			p.mu.Lock()
			c.limit = max(1, c.inUse-1)
			c.inUse--
			p.notifyLocked()
			p.mu.Unlock()
		case ctx.Err() != nil:
			p.release(c)
			return nil, nil, fmt.Errorf("sshops: open session: %w", context.Cause(ctx))
		default:
			p.release(c)
			// A dead connection is retried on a fresh one; anything else is
			// returned.
			select {
			case <-c.dead:
			case <-time.After(200 * time.Millisecond):
				return nil, nil, p.transportErr("open session", err)
			}
			if p.dial == nil {
				return nil, nil, p.transportErr("open session", err)
			}
		}
	}
}

// newSession is NewSession bounded by ctx (opening a channel on a hung
// connection blocks until keepalive gives up).
func newSession(ctx context.Context, client *ssh.Client) (*ssh.Session, error) {
	type res struct {
		s   *ssh.Session
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := client.NewSession()
		ch <- res{s, err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.s != nil {
				r.s.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// sftpClient returns an SFTP client on a live connection, opening one (it
// holds a session slot for the connection's life) when there is none.
func (p *pool) sftpClient(ctx context.Context) (*sftp.Client, *conn, error) {
	p.sftpMu.Lock()
	defer p.sftpMu.Unlock()
	p.mu.Lock()
	for _, c := range p.conns {
		if c.sftp != nil && !c.isDead() {
			p.mu.Unlock()
			return c.sftp, c, nil
		}
	}
	p.mu.Unlock()
	for attempt := 0; ; attempt++ {
		c, err := p.acquire(ctx)
		if err != nil {
			return nil, nil, err
		}
		sc, err := newSFTP(ctx, c.client)
		if err != nil {
			p.release(c)
			if attempt < 2 && p.dial != nil && p.waitDead(c, 300*time.Millisecond) {
				continue
			}
			return nil, nil, p.transportErr("sftp", err)
		}
		p.mu.Lock()
		c.sftp = sc
		p.mu.Unlock()
		go func() {
			<-c.dead
			sc.Close()
		}()
		return sc, c, nil
	}
}

// dropSFTP forgets c's SFTP client (its server is gone) and frees its slot,
// so the next call starts another.
func (p *pool) dropSFTP(c *conn) {
	p.mu.Lock()
	sc := c.sftp
	if sc != nil {
		c.sftp = nil
		c.inUse--
		p.notifyLocked()
	}
	p.mu.Unlock()
	if sc != nil {
		sc.Close()
	}
}

func newSFTP(ctx context.Context, client *ssh.Client) (*sftp.Client, error) {
	type res struct {
		c   *sftp.Client
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := openSFTP(client, "")
		if err != nil && !isTransport(err, nil) {
			// A login shell rc file that prints corrupts the subsystem's
			// stream (sshd starts sftp-server through the user's shell):
			// run the server as a command behind our marker instead.
			if c2, err2 := openSFTP(client, sftpExec); err2 == nil {
				c, err = c2, nil
			}
		}
		ch <- res{c, err}
	}()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// sftpExec starts OpenSSH's sftp-server where distributions put it, after
// the wrapper's stdout marker.
const sftpExec = `printf '` + outMarker + `'; for p in /usr/lib/openssh/sftp-server /usr/libexec/openssh/sftp-server /usr/lib/ssh/sftp-server /usr/libexec/sftp-server /usr/lib/sftp-server; do [ -x "$p" ] && exec "$p"; done; exit 127`

// openSFTP starts an SFTP client on a new session: the "sftp" subsystem
// when command is empty, else command (whose stdout starts with outMarker).
// The session is closed when the client is, or on failure.
func openSFTP(client *ssh.Client, command string) (*sftp.Client, error) {
	s, err := client.NewSession()
	if err != nil {
		return nil, err
	}
	stdin, err1 := s.StdinPipe()
	stdout, err2 := s.StdoutPipe()
	if err := errors.Join(err1, err2); err != nil {
		s.Close()
		return nil, err
	}
	if command == "" {
		err = s.RequestSubsystem("sftp")
	} else if err = s.Start(command); err == nil && !skipPreamble(stdout) {
		err = errors.New("sftp-server did not start")
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	c, err := sftp.NewClientPipe(stdout, stdin,
		sftp.MaxPacketUnchecked(maxPacket),
		sftp.UseConcurrentReads(true),
		sftp.UseConcurrentWrites(true),
	)
	if err != nil {
		s.Close()
		return nil, err
	}
	go func() {
		c.Wait()
		s.Close()
	}()
	return c, nil
}

// maxPacket is the SFTP payload size: OpenSSH's sftp-server accepts reads
// and writes up to 256 KiB packets, and larger packets are the biggest
// throughput lever (few round trips per MiB).
const maxPacket = 255 << 10

// close closes every connection the pool dialled; a borrowed client (from
// NewFromClient) is left open when owned is false.
func (p *pool) close(closeClients bool) {
	p.mu.Lock()
	if !p.closed {
		close(p.done)
	}
	p.closed = true
	conns := append([]*conn(nil), p.conns...)
	p.notifyLocked()
	p.mu.Unlock()
	for _, c := range conns {
		if c.sftp != nil {
			c.sftp.Close()
		}
		if closeClients {
			c.client.Close()
		}
	}
}
