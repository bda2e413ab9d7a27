package open_test

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/pi-sandbox/pi-sandbox/loop"
	sshops "github.com/pi-sandbox/pi-sandbox/ops/ssh"
	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
	"github.com/pi-sandbox/pi-sandbox/sandbox/sandboxtest"
)

// sshDirs makes work and outside directories the login user owns, through a
// first backend.
func sshDirs(t *testing.T, s *sshtest.Server) (work, outside string) {
	t.Helper()
	base := s.TempDir(t)
	cfg := s.Config()
	cfg.WorkDir = base
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := sshops.New(ctx, cfg)
	if err != nil {
		t.Fatalf("sshops.New: %v\n%s", err, s.Log())
	}
	defer b.Close()
	work, outside = path.Join(base, "work"), path.Join(base, "outside")
	for _, d := range []string{work, outside} {
		if err := b.MkdirAll(ctx, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return work, outside
}

func TestEscapesSSH(t *testing.T) {
	s := sshtest.Start(t)
	for _, noHelper := range []bool{false, true} {
		t.Run(map[bool]string{false: "helper", true: "nohelper"}[noHelper], func(t *testing.T) { escapesSSH(t, s, noHelper) })
	}
}

func escapesSSH(t *testing.T, s *sshtest.Server, noHelper bool) {
	sandboxtest.Run(t, func(t *testing.T) sandboxtest.Target {
		w, o := sshDirs(t, s)
		cfg := s.Config()
		cfg.WorkDir = w
		cfg.NoHelper = noHelper
		return sandboxtest.Target{Backend: s.Open(t, cfg), Outside: o}
	})
}

// dial opens an SSH connection the way an embedding program would.
func dial(t *testing.T, s *sshtest.Server) *ssh.Client {
	t.Helper()
	key, err := os.ReadFile(s.IdentityFile)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	hk, err := knownhosts.New(s.KnownHostsFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ssh.Dial("tcp", s.Addr(), &ssh.ClientConfig{
		User:            s.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: hk,
		Timeout:         30 * time.Second,
	})
	if err != nil {
		t.Fatalf("dial: %v\n%s", err, s.Log())
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestOpenSSHClient opens a sandbox on an existing connection: the tools
// work, confinement and the environment allow-list apply (nothing of the
// host passes unless listed), and Close leaves the connection open.
func TestOpenSSHClient(t *testing.T) {
	s := sshtest.Start(t)
	w, o := sshDirs(t, s)
	client := dial(t, s)
	t.Setenv("PI_SSH_PASS", "passed")
	t.Setenv("PI_SSH_HIDDEN", "hidden")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := open.SSHClient(ctx, client, open.Config{WorkDir: w, Config: sandbox.Config{Policy: sandbox.Policy{
		Env:    sandbox.EnvPolicy{Allow: []string{"PI_SSH_PASS"}, Set: map[string]string{"PI_SSH_SET": "set"}},
		Redact: sandbox.RedactPolicy{Patterns: []string{`sk-[a-z]{6}`}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := sb.NewLoop()
	if err != nil {
		t.Fatal(err)
	}
	callTool := func(name, args string) *loop.Result {
		b := l.RunBatch(ctx, nil, []loop.ToolCall{{ID: "x", Name: name, Arguments: json.RawMessage(args)}}, nil)
		return b.Results[0].Result
	}
	txt := func(r *loop.Result) string {
		var b strings.Builder
		for _, c := range r.Content {
			b.WriteString(c.Text)
		}
		return b.String()
	}
	r := callTool("bash", `{"command":"echo \"$PI_SSH_PASS|${PI_SSH_HIDDEN-unset}|$PI_SSH_SET|sk-abcdef\" > f.txt; cat f.txt"}`)
	if got := txt(r); got != "passed|unset|set|[REDACTED]\n" {
		t.Errorf("bash: %q (error %v)", got, r.IsError)
	}
	if r := callTool("read", `{"path":"f.txt"}`); txt(r) != "passed|unset|set|[REDACTED]\n" {
		t.Errorf("read: %q", txt(r))
	}
	if r := callTool("read", `{"path":"`+o+`/x"}`); !r.IsError || !strings.Contains(txt(r), "outside the sandbox") {
		t.Errorf("outside read: %q", txt(r))
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	sess, err := client.NewSession()
	if err != nil {
		t.Fatalf("the client was closed with the sandbox: %v", err)
	}
	sess.Close()
}
