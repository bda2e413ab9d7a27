package integration

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/pi-sandbox/pi-sandbox/images"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
	sshops "github.com/pi-sandbox/pi-sandbox/ops/ssh"
)

const sshdImage = "pi-sandbox/sshd"

var (
	sshdImageOnce sync.Once
	sshdImageRef  string
	sshdImageErr  error
)

// needSSHDImage builds pi-sandbox/sshd once per run when its content tag is
// missing (about a minute, like pi-sandbox/debian).
func needSSHDImage(t *testing.T) (*client.Client, string) {
	t.Helper()
	cli := needDocker(t)
	sshdImageOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		b := &images.Builder{Client: cli, Progress: os.Stderr}
		if sshdImageErr = b.Ensure(ctx, sshdImage); sshdImageErr != nil {
			return
		}
		img, _ := images.Lookup(sshdImage)
		tag, err := images.ContentTag(img)
		sshdImageRef, sshdImageErr = sshdImage+":"+tag, err
	})
	if sshdImageErr != nil {
		skipOrFail(t, fmt.Sprintf("image %s could not be built: %v", sshdImage, sshdImageErr))
	}
	return cli, sshdImageRef
}

// sshdContainer is an sshd running in a container on a network of its own,
// logging in as the image's non-root user.
type sshdContainer struct {
	cfg sshops.Config
}

func startSSHDContainer(t *testing.T) *sshdContainer {
	t.Helper()
	cli, ref := needSSHDImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	_, hk, _ := ed25519.GenerateKey(rand.Reader)
	_, ck, _ := ed25519.GenerateKey(rand.Reader)
	writeKey := func(name string, k ed25519.PrivateKey, mode os.FileMode) ssh.PublicKey {
		blk, err := ssh.MarshalPrivateKey(k, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(blk), mode); err != nil {
			t.Fatal(err)
		}
		pub, _ := ssh.NewPublicKey(k.Public())
		return pub
	}
	hostPub := writeKey("host_ed25519", hk, 0o600)
	clientPub := writeKey("id_ed25519", ck, 0o600)
	files := map[string]string{
		"authorized_keys": string(ssh.MarshalAuthorizedKey(clientPub)),
		"sshd_config": `Port 22
HostKey /etc/pi-sshd/host_ed25519
AuthorizedKeysFile /etc/pi-sshd/authorized_keys
PidFile /run/sshd.pid
PermitRootLogin no
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
LogLevel INFO
Subsystem sftp /usr/lib/openssh/sftp-server
`,
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	var rnd [4]byte
	rand.Read(rnd[:])
	netName := "pi-sandbox-ssh-" + runID + "-" + hex.EncodeToString(rnd[:])
	l := labels()
	l["pi-sandbox.test"] = "ssh"
	if _, err := cli.NetworkCreate(ctx, netName, client.NetworkCreateOptions{Driver: "bridge", Labels: l}); err != nil {
		t.Fatalf("network create: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cli.NetworkRemove(ctx, netName, client.NetworkRemoveOptions{})
	})
	init := true
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image:  ref,
			Labels: l,
			Cmd:    []string{"/bin/sh", "-c", "mkdir -p /run/sshd && exec /usr/sbin/sshd -D -e -f /etc/pi-sshd/sshd_config"},
		},
		HostConfig: &container.HostConfig{
			Binds: []string{dir + ":/etc/pi-sshd:ro"},
			Init:  &init,
		},
		NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{netName: {}}},
	})
	if err != nil {
		t.Fatalf("container create: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cli.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		checkNoContainers(t, "pi-sandbox.test=ssh")
	})
	if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("container start: %v", err)
	}
	// Following the logs from the start replays what sshd already wrote.
	logs, err := cli.ContainerLogs(ctx, res.ID, client.ContainerLogsOptions{ShowStderr: true, ShowStdout: true, Follow: true})
	if err != nil {
		t.Fatalf("container logs: %v", err)
	}
	defer logs.Close()
	// Ready when sshd says it listens (the log stream is multiplexed; the
	// line arrives in one frame).
	type result struct {
		ok  bool
		log string
	}
	ready := make(chan result, 1)
	go func() {
		var seen []string
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			seen = append(seen, sc.Text())
			if strings.Contains(sc.Text(), "Server listening on 0.0.0.0") {
				ready <- result{ok: true}
				return
			}
		}
		ready <- result{log: strings.Join(seen, "\n")}
	}()
	select {
	case r := <-ready:
		if !r.ok {
			t.Fatalf("sshd in the container exited:\n%s", r.log)
		}
	case <-ctx.Done():
		t.Fatal("sshd in the container not ready")
	}
	ins, err := cli.ContainerInspect(ctx, res.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ep := ins.Container.NetworkSettings.Networks[netName]
	if ep == nil || !ep.IPAddress.IsValid() {
		t.Fatalf("no address on %s", netName)
	}
	ip := ep.IPAddress.String()
	kh := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(net.JoinHostPort(ip, "22"))}, hostPub)
	if err := os.WriteFile(kh, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &sshdContainer{cfg: sshops.Config{
		Host:           ip,
		User:           images.UserName,
		IdentityFiles:  []string{filepath.Join(dir, "id_ed25519")},
		NoAgent:        true,
		KnownHostsFile: kh,
		SSHConfigFile:  "none",
	}}
}

// TestSSHContainerConformance runs the ops suite against sshd in a
// container, logged in as a non-root user (for whom OpenSSH 9.2 honours
// signal requests, unlike root on the host): the whole suite with the
// helper, the core cases without it (SFTP and a session per command, the
// fallback).
func TestSSHContainerConformance(t *testing.T) {
	sc := startSSHDContainer(t)
	open := func(noHelper bool) func(t *testing.T) ops.Backend {
		return func(t *testing.T) ops.Backend {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cfg := sc.cfg
			cfg.NoHelper = noHelper
			b, err := sshops.New(ctx, cfg)
			if err != nil {
				t.Fatalf("sshops.New: %v", err)
			}
			t.Cleanup(func() { b.Close() })
			if got := b.Info().Has("helper"); got == noHelper {
				t.Fatalf("helper capability %v, want %v (limits %v)", got, !noHelper, b.Info().Limits)
			}
			return b
		}
	}
	t.Run("helper", func(t *testing.T) { opstest.TestBackend(t, open(false)) })
	t.Run("nohelper", func(t *testing.T) { opstest.TestBackendCore(t, open(true), opstest.Gaps{}) })
}
