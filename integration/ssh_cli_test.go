package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	sshops "github.com/pi-sandbox/pi-sandbox/ops/ssh"
	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// piTool runs `pi-sandbox tool ARGS...` and returns stdout and the exit code.
func piTool(t *testing.T, args ...string) (string, int) {
	t.Helper()
	if piBin == "" {
		skipOrFail(t, fmt.Sprintf("no pi-sandbox binary: %v", piBinErr))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, piBin, append([]string{"tool"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Logf("stderr: %s", errb.String())
	}
	return out.String(), code
}

func TestSSHCLITool(t *testing.T) {
	s := sshtest.Start(t)
	wd := s.TempDir(t)
	flags := []string{"--backend", "ssh",
		"--host", s.User + "@" + s.Addr(),
		"--identity", s.IdentityFile,
		"--known-hosts", s.KnownHostsFile,
		"--workdir", wd}
	out, code := piTool(t, append(flags, "bash", `{"command":"echo hi; pwd"}`)...)
	var res struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
		t.Fatalf("bash: exit %d, %q: %v", code, out, err)
	}
	if res.IsError || len(res.Content) != 1 || res.Content[0].Text != "hi\n"+wd+"\n" {
		t.Fatalf("bash result: %s", out)
	}
	out, code = piTool(t, append(flags, "write", `{"path":"a.txt","content":"héllo\n"}`)...)
	if code != 0 {
		t.Fatalf("write: exit %d: %s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(wd, "a.txt")); err != nil || string(b) != "héllo\n" {
		t.Fatalf("written file: %q %v", b, err)
	}
	// An unreachable host produces no result: exit 1.
	bad := append([]string(nil), flags...)
	bad[3] = s.User + "@127.0.0.1:" + strconv.Itoa(closedPort(t))
	if _, code := piTool(t, append(bad, "bash", `{"command":"true"}`)...); code != 1 {
		t.Fatalf("unreachable host: exit %d, want 1", code)
	}
}

func closedPort(t *testing.T) int {
	p := startProxy(t, "127.0.0.1:1")
	port := p.Port()
	p.Close()
	return port
}

// TestSSHConfigAlias resolves an alias from an ssh config file, through a
// ProxyJump hop (the same sshd, which allows TCP forwarding).
func TestSSHConfigAlias(t *testing.T) {
	s := sshtest.Start(t)
	conf := filepath.Join(t.TempDir(), "config")
	text := fmt.Sprintf(`Host direct
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %s

Host jumped
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %s
  ProxyJump direct
`, s.Port, s.User, s.IdentityFile, s.Port, s.User, s.IdentityFile)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, alias := range []string{"direct", "jumped"} {
		t.Run(alias, func(t *testing.T) {
			cfg := sshops.Config{Host: alias, SSHConfigFile: conf, KnownHostsFile: s.KnownHostsFile, NoAgent: true, WorkDir: s.TempDir(t)}
			b := openSSH(t, s, cfg)
			if got := runOut(t, b, "id -un"); got != s.User+"\n" {
				t.Fatalf("id -un = %q", got)
			}
			ctx := context.Background()
			f := path.Join(b.Info().WorkDir, "x")
			if err := b.WriteFile(ctx, f, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			if got, err := ops.ReadFile(ctx, b, f); err != nil || string(got) != "x" {
				t.Fatalf("read back %q %v", got, err)
			}
		})
	}
}

// TestSSHAgentAuth authenticates through ssh-agent (SSH_AUTH_SOCK), with
// no identity file given.
func TestSSHAgentAuth(t *testing.T) {
	if _, err := exec.LookPath("ssh-agent"); err != nil {
		skipOrFail(t, "ssh-agent not installed (apt-get install openssh-client)")
	}
	s := sshtest.Start(t)
	sock := filepath.Join(t.TempDir(), "agent.sock")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	out, err := agent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	// ssh-agent -D prints its environment lines once the socket listens.
	line := make([]byte, 256)
	if _, err := out.Read(line); err != nil {
		t.Fatalf("ssh-agent: %v", err)
	}
	add := exec.Command("ssh-add", s.IdentityFile)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if b, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v: %s", err, b)
	}
	t.Setenv("SSH_AUTH_SOCK", sock)
	t.Setenv("HOME", t.TempDir()) // no default ~/.ssh/id_* keys
	cfg := s.Config()
	cfg.IdentityFiles = nil
	cfg.NoAgent = false
	b := openSSH(t, s, cfg)
	if got := runOut(t, b, "echo agent"); got != "agent\n" {
		t.Fatalf("output %q", got)
	}
}
