package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// The check-then-use confinement keeps ops.TargetListener: a port is not
// a path.
var _ ops.TargetListener = (*confined)(nil)

func (c *confined) ListenTarget(ctx context.Context) (net.Listener, error) {
	if l, ok := c.b.(ops.TargetListener); ok {
		return l.ListenTarget(ctx)
	}
	return nil, ops.ErrUnsupported
}

// AdvisoryEgress is the limit a sandbox reports when its egress rules
// hold only for the programs that use the proxy: the target shares its
// loopback and has a route out of its own (local, ssh).
const AdvisoryEgress = "egress policy is advisory here: the proxy on the shared loopback needs the session's credential, but commands have their own route out"

// egress is a session's proxy: started when the policy has network rules,
// closed by Close.
type egress struct {
	proxy *egressProxy
	env   []string // what the session's commands get
	limit []string // the lines Info adds to Limits
	// bundle is the session's CA bundle in the target (inject rules), on b.
	bundle string
	b      ops.Backend
}

// startEgress listens on the target's loopback through b and serves the
// proxy there with the policy's rules; audit, when set, gets a line per
// connection.
func startEgress(ctx context.Context, b ops.Backend, pol *compiledPolicy, np NetworkPolicy, audit *auditLog) (*egress, error) {
	rules, inject := pol.egress, pol.inject
	info := b.Info()
	shared := info.Has(ops.CapSharedLoopback)
	if shared && len(inject.rules) > 0 && !np.AllowSharedInject {
		return nil, ops.ConfigError("sandbox: network inject rules on %s need --allow-shared-inject (policy network.allowSharedInject): the proxy listens on a loopback the host's other users share, and a process of the sandbox's user can read the proxy's credential and have the header added", info.Backend)
	}
	tl, ok := b.(ops.TargetListener)
	if !ok {
		return nil, fmt.Errorf("sandbox: network allow rules: %w: backend %s cannot listen in its target for the egress proxy", ops.ErrUnsupported, b.Info().Backend)
	}
	ln, err := tl.ListenTarget(ctx)
	if err != nil {
		return nil, fmt.Errorf("sandbox: network allow rules need the egress proxy in the target (and so the helper): %w", err)
	}
	token := ""
	if shared {
		var k [16]byte
		rand.Read(k[:])
		token = hex.EncodeToString(k[:])
	}
	p := newEgressProxy(ln, rules, token)
	p.inject = inject
	bundle := ""
	if len(inject.rules) > 0 {
		if p.mitm, bundle, err = startIntercepting(ctx, b, pol); err != nil {
			ln.Close()
			return nil, err
		}
	}
	if np.MaxConnections > 0 {
		p.max = np.MaxConnections
	}
	if audit != nil {
		p.audit = audit.writeEgress
	}
	port := 0
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		port = a.Port
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	if token != "" {
		u.User = url.UserPassword(egressUser, token)
	}
	proxy := u.String()
	e := &egress{
		proxy: p,
		env: []string{
			"HTTP_PROXY=" + proxy, "HTTPS_PROXY=" + proxy, "http_proxy=" + proxy, "https_proxy=" + proxy,
			"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
		},
		limit: []string{fmt.Sprintf("egress: only through the session's proxy on the target's 127.0.0.1:%d, to %s", port, rules)},
	}
	if bundle != "" {
		e.bundle, e.b = bundle, b
		for _, k := range caBundleEnv {
			e.env = append(e.env, k+"="+bundle)
		}
		e.limit = append(e.limit, "egress: headers added outside the target to HTTP and HTTPS requests for "+inject.String()+
			"; HTTPS to them is terminated with the session's CA, which commands trust through "+bundle)
	}
	if shared {
		e.limit = append(e.limit, AdvisoryEgress)
	}
	go p.serve()
	return e, nil
}

func (e *egress) close() {
	if e != nil {
		e.proxy.close()
		if e.bundle != "" {
			removeCABundle(e.b, e.bundle)
		}
	}
}

// startIntercepting makes the session's CA and writes its bundle in the
// target's state directory.
func startIntercepting(ctx context.Context, b ops.Backend, pol *compiledPolicy) (*intercepting, string, error) {
	roots := pol.roots
	if roots == nil {
		var err error
		if roots, err = upstreamRoots(nil); err != nil {
			return nil, "", err
		}
	}
	ca, err := newEgressCA()
	if err != nil {
		return nil, "", err
	}
	bundle, err := writeCABundle(ctx, b, b.Info().SpillDir, ca)
	if err != nil {
		return nil, "", err
	}
	return &intercepting{ca: ca, roots: roots}, bundle, nil
}

// writeEgress appends one proxy connection's line.
func (a *auditLog) writeEgress(e EgressEntry) {
	line, err := loop.MarshalNoEscape(e)
	if err != nil {
		return
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.f.Write(line); err != nil && a.err == nil {
		a.err = fmt.Errorf("sandbox: audit log: %w", err)
	}
}

// Info is the backend's Info, with the session's egress rules (and where
// they are advisory) among its Limits.
func (s *Sandbox) Info() ops.Info {
	i := s.backend.Info()
	if s.egress != nil {
		i.Limits = append(append([]string(nil), i.Limits...), s.egress.limit...)
	}
	return i
}
