package sshops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/kevinburke/ssh_config"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// dialer opens authenticated connections to one host, through its ProxyJump
// hops when it has any.
type dialer struct {
	cfg    Config
	sc     *ssh_config.Config
	target endpoint

	agentMu   sync.Mutex
	agentConn net.Conn // one connection to the agent, reused by every dial
	agent     agent.ExtendedAgent
}

// agentClient returns a client of the agent at sock, connecting once: the
// signers it returns sign through that connection during the handshake.
func (d *dialer) agentClient(sock string) (agent.ExtendedAgent, error) {
	d.agentMu.Lock()
	defer d.agentMu.Unlock()
	if d.agentConn == nil {
		c, err := net.Dial("unix", sock)
		if err != nil {
			return nil, fmt.Errorf("sshops: agent: %w", err)
		}
		d.agentConn, d.agent = c, agent.NewClient(c)
	}
	return d.agent, nil
}

// close closes the agent connection.
func (d *dialer) close() {
	d.agentMu.Lock()
	defer d.agentMu.Unlock()
	if d.agentConn != nil {
		d.agentConn.Close()
		d.agentConn, d.agent = nil, nil
	}
}

func newDialer(cfg Config) (*dialer, error) {
	sc, err := loadSSHConfig(cfg.SSHConfigFile)
	if err != nil {
		return nil, err
	}
	t, err := resolve(sc, cfg.Host, cfg.Port, cfg.User, cfg.IdentityFiles)
	if err != nil {
		return nil, err
	}
	if t.user == "" {
		return nil, fmt.Errorf("sshops: no user for %s (set User or user@host)", cfg.Host)
	}
	return &dialer{cfg: cfg, sc: sc, target: t}, nil
}

// dial connects to the target. ctx bounds the whole dial, handshakes
// included: when it is done the connections being set up are closed.
func (d *dialer) dial(ctx context.Context) (*ssh.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.DialTimeout)
	defer cancel()
	var (
		via  *ssh.Client
		hops []*ssh.Client
	)
	fail := func(err error) (*ssh.Client, error) {
		for i := len(hops) - 1; i >= 0; i-- {
			hops[i].Close()
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("sshops: dial %s: %w: %w", d.target.alias, ops.ErrTransport, context.Cause(ctx))
		}
		return nil, err
	}
	for _, spec := range d.target.jump {
		user, host, port, err := SplitTarget(spec)
		if err != nil {
			return fail(err)
		}
		e, err := resolve(d.sc, host, port, user, nil)
		if err != nil {
			return fail(err)
		}
		c, err := d.dialOne(ctx, via, e)
		if err != nil {
			return fail(err)
		}
		hops = append(hops, c)
		via = c
	}
	c, err := d.dialOne(ctx, via, d.target)
	if err != nil {
		return fail(err)
	}
	if len(hops) > 0 {
		// The jump connections live as long as the target connection.
		go func() {
			c.Wait()
			for i := len(hops) - 1; i >= 0; i-- {
				hops[i].Close()
			}
		}()
	}
	return c, nil
}

func (d *dialer) dialOne(ctx context.Context, via *ssh.Client, e endpoint) (*ssh.Client, error) {
	cc, err := d.clientConfig(e)
	if err != nil {
		return nil, err
	}
	var conn net.Conn
	if via == nil {
		var nd net.Dialer
		conn, err = nd.DialContext(ctx, "tcp", e.addr())
	} else {
		conn, err = via.DialContext(ctx, "tcp", e.addr())
	}
	if err != nil {
		return nil, fmt.Errorf("sshops: dial %s: %w: %w", e.addr(), ops.ErrTransport, err)
	}
	// The handshake has no ctx of its own (golang/go#15113): closing the
	// connection when ctx is done unblocks it.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	sconn, chans, reqs, err := ssh.NewClientConn(conn, e.addr(), cc)
	if !stop() {
		if err == nil {
			sconn.Close()
		}
		conn.Close()
		return nil, fmt.Errorf("sshops: handshake with %s: %w: %w", e.addr(), ops.ErrTransport, context.Cause(ctx))
	}
	if err != nil {
		conn.Close()
		var kerr *knownhosts.KeyError
		if errors.As(err, &kerr) {
			return nil, fmt.Errorf("sshops: handshake with %s: %w", e.addr(), err)
		}
		return nil, fmt.Errorf("sshops: handshake with %s: %w: %w", e.addr(), ops.ErrTransport, err)
	}
	return ssh.NewClient(sconn, chans, reqs), nil
}

func (d *dialer) clientConfig(e endpoint) (*ssh.ClientConfig, error) {
	cc := &ssh.ClientConfig{User: e.user, Timeout: d.cfg.DialTimeout}
	if d.cfg.InsecureIgnoreHostKey {
		cc.HostKeyCallback = ssh.InsecureIgnoreHostKey()
	} else {
		cb, algos, err := hostKeys(d.cfg.KnownHostsFile, e.addr())
		if err != nil {
			return nil, err
		}
		cc.HostKeyCallback = cb
		cc.HostKeyAlgorithms = algos
	}
	auth, err := d.authMethods(d.cfg, e)
	if err != nil {
		return nil, err
	}
	cc.Auth = auth
	return cc, nil
}

// hostKeys returns the known_hosts callback and the host key algorithms
// matching the keys recorded for addr, so the server presents a key we can
// verify rather than its preferred one.
func hostKeys(file, addr string) (ssh.HostKeyCallback, []string, error) {
	if file == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, nil, fmt.Errorf("sshops: known_hosts: %w", err)
		}
		file = filepath.Join(home, ".ssh", "known_hosts")
	}
	cb, err := knownhosts.New(file)
	if err != nil {
		return nil, nil, fmt.Errorf("sshops: known_hosts (set KnownHostsFile, or InsecureIgnoreHostKey to skip verification): %w", err)
	}
	// Asking about a key that cannot be recorded lists the recorded ones.
	var kerr *knownhosts.KeyError
	if err := cb(addr, &net.TCPAddr{}, probeKey{}); !errors.As(err, &kerr) || len(kerr.Want) == 0 {
		return cb, nil, nil
	}
	seen := map[string]bool{}
	var algos []string
	for _, k := range kerr.Want {
		t := k.Key.Type()
		names := []string{t}
		if t == ssh.KeyAlgoRSA {
			names = []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				algos = append(algos, n)
			}
		}
	}
	sort.SliceStable(algos, func(i, j int) bool { return algoRank(algos[i]) < algoRank(algos[j]) })
	return cb, algos, nil
}

func algoRank(a string) int {
	switch a {
	case ssh.KeyAlgoED25519:
		return 0
	case ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521:
		return 1
	case ssh.KeyAlgoRSASHA512:
		return 2
	case ssh.KeyAlgoRSASHA256:
		return 3
	}
	return 4
}

// probeKey is a public key no known_hosts file records.
type probeKey struct{}

func (probeKey) Type() string                        { return "pi-sandbox-probe" }
func (probeKey) Marshal() []byte                     { return []byte("pi-sandbox-probe") }
func (probeKey) Verify([]byte, *ssh.Signature) error { return errors.New("probe") }
func (probeKey) String() string                      { return "probe" }

func (d *dialer) authMethods(cfg Config, e endpoint) ([]ssh.AuthMethod, error) {
	var signers []ssh.Signer
	ids := e.identities
	explicit := len(ids) > 0
	if !explicit {
		if home, err := os.UserHomeDir(); err == nil {
			for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
				ids = append(ids, filepath.Join(home, ".ssh", n))
			}
		}
	}
	var firstErr error
	for _, f := range ids {
		b, err := os.ReadFile(f)
		if err != nil {
			if explicit && firstErr == nil {
				firstErr = fmt.Errorf("sshops: identity: %w", err)
			}
			continue
		}
		s, err := ssh.ParsePrivateKey(b)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("sshops: identity %s: %w", f, err)
			}
			continue
		}
		signers = append(signers, s)
	}
	if explicit && firstErr != nil {
		return nil, firstErr
	}
	var methods []ssh.AuthMethod
	if len(signers) > 0 {
		methods = append(methods, ssh.PublicKeys(signers...))
	}
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" && !cfg.NoAgent {
		methods = append(methods, ssh.PublicKeysCallback(func() ([]ssh.Signer, error) {
			a, err := d.agentClient(sock)
			if err != nil {
				return nil, err
			}
			return a.Signers()
		}))
	}
	if len(methods) == 0 {
		if firstErr != nil {
			return nil, firstErr
		}
		return nil, fmt.Errorf("sshops: no identity for %s@%s (set IdentityFiles or run an agent)", e.user, e.alias)
	}
	return methods, nil
}
