package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path"
	"strconv"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/pi-sandbox/pi-sandbox/ops"
	sshops "github.com/pi-sandbox/pi-sandbox/ops/ssh"
	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// BenchmarkSSH measures an open backend against the baselines on the same
// sshd: a raw x/crypto session running `true` on an open connection, the
// ssh CLI (a new connection each time), and the pi-sandbox CLI:
//
//	go test -run '^$' -bench SSH -benchtime 20x ./integration/
func BenchmarkSSH(b *testing.B) {
	s := sshtest.Start(b)
	cfg := s.Config()
	cfg.WorkDir = s.TempDir(b)
	ctx := context.Background()
	be, err := sshops.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	f := path.Join(cfg.WorkDir, "f.txt")
	if err := be.WriteFile(ctx, f, []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("RunTrue", func(b *testing.B) {
		for b.Loop() {
			if err := be.Run(ctx, &ops.Cmd{Command: "true"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ReadSmall", func(b *testing.B) {
		for b.Loop() {
			if _, err := ops.ReadFile(ctx, be, f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("RawSessionTrue", func(b *testing.B) {
		client := rawClient(b, s)
		defer client.Close()
		for b.Loop() {
			sess, err := client.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			if err := sess.Run("true"); err != nil {
				b.Fatal(err)
			}
			sess.Close()
		}
	})
	b.Run("SSHCLITrue", func(b *testing.B) {
		if _, err := exec.LookPath("ssh"); err != nil {
			b.Skip("no ssh CLI")
		}
		for b.Loop() {
			cmd := exec.Command("ssh", "-o", "BatchMode=yes", "-o", "UserKnownHostsFile="+s.KnownHostsFile,
				"-i", s.IdentityFile, "-p", strconv.Itoa(s.Port), s.User+"@"+s.Host, "true")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
		}
	})
	b.Run("ToolCLIBashTrue", func(b *testing.B) {
		if piBin == "" {
			b.Skip("no pi-sandbox binary")
		}
		for b.Loop() {
			cmd := exec.Command(piBin, "tool", "--backend", "ssh", "--host", s.User+"@"+s.Addr(),
				"--identity", s.IdentityFile, "--known-hosts", s.KnownHostsFile, "--workdir", cfg.WorkDir,
				"bash", `{"command":"true"}`)
			if out, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(out, []byte(`"isError":false`)) {
				b.Fatalf("%v %s", err, out)
			}
		}
	})
}

func rawClient(b *testing.B, s *sshtest.Server) *ssh.Client {
	key, err := sshReadKey(s.IdentityFile)
	if err != nil {
		b.Fatal(err)
	}
	hk, err := knownhosts.New(s.KnownHostsFile)
	if err != nil {
		b.Fatal(err)
	}
	c, err := ssh.Dial("tcp", s.Addr(), &ssh.ClientConfig{User: s.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(key)}, HostKeyCallback: hk})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func sshReadKey(file string) (ssh.Signer, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return ssh.ParsePrivateKey(data)
}
