package sshops

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kevinburke/ssh_config"
)

// Config configures a connection to a remote host. The zero value (plus a
// Host) is the secure default: the host key is verified against
// ~/.ssh/known_hosts, authentication uses the default key files and the
// agent at SSH_AUTH_SOCK, nothing is forwarded.
type Config struct {
	// Host is a host name, an address, or an alias from the ssh config file
	// (HostName, User, Port, IdentityFile and ProxyJump are honoured).
	// Required for New.
	Host string
	// Port is the TCP port. Zero: the config file's Port, else 22.
	Port int
	// User is the remote user. Empty: the config file's User, else the
	// local user's name.
	User string

	// IdentityFiles are private key files. Empty: the config file's
	// IdentityFile entries, else ~/.ssh/id_ed25519, id_ecdsa and id_rsa when
	// they exist. Passphrase-protected keys are skipped.
	IdentityFiles []string
	// NoAgent disables authentication through the agent at SSH_AUTH_SOCK.
	// The zero value uses the agent when the variable is set. The agent is
	// never forwarded to the remote host.
	NoAgent bool

	// KnownHostsFile holds the recorded host keys. Empty:
	// ~/.ssh/known_hosts. A host that is not recorded, or whose key differs,
	// is refused.
	KnownHostsFile string
	// InsecureIgnoreHostKey accepts any host key. It is the only way to skip
	// verification, and makes a man in the middle invisible.
	InsecureIgnoreHostKey bool

	// SSHConfigFile is the OpenSSH client config read for aliases. Empty:
	// ~/.ssh/config (a missing file is fine); "none" reads no file.
	SSHConfigFile string

	// WorkDir is the working directory on the remote host. Empty: the
	// remote user's home.
	WorkDir string

	// DialTimeout bounds one TCP dial plus the SSH handshake. Zero: 30s.
	DialTimeout time.Duration
	// KeepAlive is the interval of keepalive@openssh.com requests; a
	// connection is closed after three unanswered ones. Zero: 15s.
	KeepAlive time.Duration
	// MaxSessionsPerConn caps the sessions multiplexed on one connection
	// (the SFTP client holds one). Zero: 8, below sshd's default
	// MaxSessions of 10.
	MaxSessionsPerConn int
	// MaxConns caps the connections to the host. Zero: 16.
	MaxConns int

	// ShimBinary is the local path of the static helper binary
	// (pi-sandbox-shim), uploaded by SFTP (once per host: the remote path is
	// content addressed); it serves the helper and runs commands under the
	// shim, which also kills processes that call setsid themselves. Zero:
	// shim.HostBinary(). Without a usable one New fails with a
	// *shim.BinaryError unless NoHelper is set. When the remote OS or
	// architecture differ, or the upload or a test run fails, the fallback
	// path serves and Info.Limits says why.
	ShimBinary string
	// NoHelper asks for the fallback path: SFTP and one session per command
	// instead of the long-lived helper session, and the helper binary is
	// not required. Commands still run under the shim when the binary is
	// there; without it a process that calls setsid itself survives a kill,
	// and Info.Limits says so.
	NoHelper bool
	// MaxBackground bounds the background process groups the helper owns
	// (zero: 64).
	MaxBackground int
}

// ErrNoHost is returned by New when Config.Host is empty.
var ErrNoHost = errors.New("sshops: no host")

func (c *Config) withDefaults() {
	if c.DialTimeout <= 0 {
		c.DialTimeout = 30 * time.Second
	}
	if c.KeepAlive <= 0 {
		c.KeepAlive = 15 * time.Second
	}
	if c.MaxSessionsPerConn <= 0 {
		c.MaxSessionsPerConn = 8
	}
	if c.MaxConns <= 0 {
		c.MaxConns = 16
	}
}

// endpoint is one resolved hop: where to connect and as whom.
type endpoint struct {
	alias      string // the name the user gave (for known_hosts and messages)
	hostName   string
	port       int
	user       string
	identities []string
	jump       []string // ProxyJump hops, outermost first
}

func (e endpoint) addr() string { return net.JoinHostPort(e.hostName, strconv.Itoa(e.port)) }

// loadSSHConfig reads the OpenSSH client config named by cfg.SSHConfigFile.
func loadSSHConfig(name string) (*ssh_config.Config, error) {
	if name == "none" {
		return nil, nil
	}
	explicit := name != ""
	if !explicit {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, nil
		}
		name = filepath.Join(home, ".ssh", "config")
	}
	f, err := os.Open(name)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("sshops: ssh config: %w", err)
	}
	defer f.Close()
	c, err := ssh_config.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("sshops: ssh config %s: %w", name, err)
	}
	return c, nil
}

// resolve applies the ssh config to a host spec "[user@]host[:port]" (jump
// hops) or to the fields of cfg (the target).
func resolve(sc *ssh_config.Config, host string, port int, user string, ids []string) (endpoint, error) {
	get := func(key string) string {
		if sc == nil {
			return ""
		}
		v, _ := sc.Get(host, key)
		return v
	}
	e := endpoint{alias: host, hostName: host, port: port, user: user, identities: ids}
	if hn := get("HostName"); hn != "" {
		e.hostName = strings.ReplaceAll(hn, "%h", host)
	}
	if e.port == 0 {
		if p := get("Port"); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil || n <= 0 || n > 65535 {
				return e, fmt.Errorf("sshops: ssh config: bad Port %q for %s", p, host)
			}
			e.port = n
		} else {
			e.port = 22
		}
	}
	if e.user == "" {
		e.user = get("User")
	}
	if e.user == "" {
		e.user = localUser()
	}
	if len(e.identities) == 0 && sc != nil {
		all, _ := sc.GetAll(host, "IdentityFile")
		for _, f := range all {
			e.identities = append(e.identities, expandHome(f))
		}
	}
	if pj := get("ProxyJump"); pj != "" && !strings.EqualFold(pj, "none") {
		for _, h := range strings.Split(pj, ",") {
			if h = strings.TrimSpace(h); h != "" {
				e.jump = append(e.jump, h)
			}
		}
	}
	return e, nil
}

// SplitTarget parses "[user@]host[:port]" (IPv6 addresses in brackets).
// A port of 0 means "not given".
func SplitTarget(s string) (user, host string, port int, err error) {
	if i := strings.LastIndex(s, "@"); i >= 0 {
		user, s = s[:i], s[i+1:]
	}
	host = s
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		h, p, splitErr := net.SplitHostPort(s)
		if splitErr == nil {
			host = h
			port, err = strconv.Atoi(p)
			if err != nil || port <= 0 || port > 65535 {
				return "", "", 0, fmt.Errorf("sshops: bad port in %q", s)
			}
		} else if strings.HasPrefix(s, "[") {
			host = strings.Trim(s, "[]")
		}
	}
	if host == "" {
		return "", "", 0, fmt.Errorf("sshops: no host in %q", s)
	}
	return user, host, port, nil
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}

func localUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if os.Getuid() == 0 {
		return "root"
	}
	return ""
}
