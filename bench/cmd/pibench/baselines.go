package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
	"golang.org/x/crypto/ssh"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// baseline does an operation without pi-sandbox.
type baseline struct {
	name string
	f    func(ctx context.Context, t *toggle) error
}

// latBaselines returns, per latency op, the baseline its figures are
// divided by: raw Go/sh locally, the docker CLI, the OpenSSH client with a
// ControlMaster.
func latBaselines(ctx context.Context, e *env) (map[string]baseline, func(), error) {
	switch e.name {
	case "local":
		return localBaselines(e), func() {}, nil
	case "docker":
		return dockerBaselines(e), func() {}, nil
	case "ssh":
		return sshBaselines(ctx, e)
	case "k8s":
		return k8sBaselines(e), func() {}, nil
	}
	return nil, func() {}, nil
}

// k8sBaselines are kubectl exec into the bench pod (pods/exec through the
// API server and the kubelet, as the backend's transport).
func k8sBaselines(e *env) map[string]baseline {
	run := func(ctx context.Context, stdin []byte, argv ...string) error {
		_, err := runExt(ctx, stdin, e.kubectl, e.kubectlExec(stdin != nil, argv...)...)
		return err
	}
	return map[string]baseline{
		"read1k": {"kubectl exec cat", func(ctx context.Context, _ *toggle) error {
			return run(ctx, nil, "cat", e.path("lat/r1k.txt"))
		}},
		"write1k": {"kubectl exec -i sh -c 'cat >'", func(ctx context.Context, _ *toggle) error {
			return run(ctx, []byte(kib), "sh", "-c", "cat > "+e.path("lat/w-base.txt"))
		}},
		"edit": {"kubectl exec sed -i", func(ctx context.Context, t *toggle) error {
			o, n := t.pair()
			return run(ctx, nil, "sed", "-i", "s/line "+o+"/line "+n+"/", e.path("lat/e-base.txt"))
		}},
		"true": {"kubectl exec true", func(ctx context.Context, _ *toggle) error {
			return run(ctx, nil, "true")
		}},
		"ls100": {"kubectl exec ls", func(ctx context.Context, _ *toggle) error {
			return run(ctx, nil, "ls", "-a", e.path("lat/d100"))
		}},
		"grep10k": {"kubectl exec rg -n", func(ctx context.Context, _ *toggle) error {
			return run(ctx, nil, "sh", "-c", "cd "+e.work+" && if command -v rg >/dev/null; then rg -n needle tree; else grep -rn needle tree; fi")
		}},
	}
}

func localBaselines(e *env) map[string]baseline {
	grepCmd := []string{"grep", "-rn", "needle", "tree"}
	if p, err := exec.LookPath("rg"); err == nil {
		grepCmd = []string{p, "-n", "needle", "tree"}
	}
	return map[string]baseline{
		"read1k": {"os.ReadFile", func(context.Context, *toggle) error {
			_, err := os.ReadFile(e.path("lat/r1k.txt"))
			return err
		}},
		"write1k": {"os.WriteFile", func(context.Context, *toggle) error {
			return os.WriteFile(e.path("lat/w-base.txt"), []byte(kib), 0o644)
		}},
		"edit": {"os.ReadFile+Replace+WriteFile", func(_ context.Context, t *toggle) error {
			f := e.path("lat/e-base.txt")
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			o, n := t.pair()
			return os.WriteFile(f, bytes.Replace(b, []byte("line "+o), []byte("line "+n), 1), 0o644)
		}},
		"true": {"sh -c true", func(ctx context.Context, _ *toggle) error {
			_, err := runExt(ctx, nil, "sh", "-c", "true")
			return err
		}},
		"ls100": {"os.ReadDir", func(context.Context, *toggle) error {
			_, err := os.ReadDir(e.path("lat/d100"))
			return err
		}},
		"grep10k": {filepath.Base(grepCmd[0]) + " -n needle (process)", func(ctx context.Context, _ *toggle) error {
			cmd := exec.CommandContext(ctx, grepCmd[0], grepCmd[1:]...)
			cmd.Dir = e.work
			return cmd.Run()
		}},
	}
}

func (e *env) dockerExec(stdin bool, argv ...string) []string {
	var a []string
	if e.dockerHost != "" {
		a = append(a, "-H", e.dockerHost)
	}
	a = append(a, "exec", "-u", e.user, "-w", e.work)
	if stdin {
		a = append(a, "-i")
	}
	return append(append(a, e.container), argv...)
}

func dockerBaselines(e *env) map[string]baseline {
	run := func(ctx context.Context, stdin []byte, argv ...string) error {
		_, err := runExt(ctx, stdin, "docker", e.dockerExec(stdin != nil, argv...)...)
		return err
	}
	return map[string]baseline{
		"read1k": {"docker exec cat", func(ctx context.Context, _ *toggle) error {
			return run(ctx, nil, "cat", "lat/r1k.txt")
		}},
		"write1k": {"docker exec -i sh -c 'cat >'", func(ctx context.Context, _ *toggle) error {
			return run(ctx, []byte(kib), "sh", "-c", "cat > lat/w-base.txt")
		}},
		"edit": {"docker exec sed -i", func(ctx context.Context, t *toggle) error {
			o, n := t.pair()
			return run(ctx, nil, "sed", "-i", "s/line "+o+"/line "+n+"/", "lat/e-base.txt")
		}},
		"true": {"docker exec true", func(ctx context.Context, _ *toggle) error {
			return run(ctx, nil, "true")
		}},
		"ls100": {"docker exec ls", func(ctx context.Context, _ *toggle) error {
			return run(ctx, nil, "ls", "-a", "lat/d100")
		}},
		"grep10k": {"docker exec rg -n", func(ctx context.Context, _ *toggle) error {
			err := run(ctx, nil, "rg", "-n", "needle", "tree")
			if err != nil && strings.Contains(err.Error(), "executable file not found") {
				return run(ctx, nil, "grep", "-rn", "needle", "tree")
			}
			return err
		}},
	}
}

// sshBaselines use the OpenSSH client multiplexed over a ControlMaster
// started here (the fairest command-line comparison).
func sshBaselines(ctx context.Context, e *env) (map[string]baseline, func(), error) {
	cm := controlArgs(e)
	// Start the master; later calls reuse it.
	if _, err := runExt(ctx, nil, "ssh", e.sshArgs(cm, "true")...); err != nil {
		return nil, func() {}, err
	}
	stop := func() {
		runExt(context.Background(), nil, "ssh", e.sshArgs(append(cm, "-O", "exit"))...)
	}
	run := func(ctx context.Context, stdin []byte, command string) error {
		_, err := runExt(ctx, stdin, "ssh", e.sshArgs(cm, "cd "+e.work+" && "+command)...)
		return err
	}
	return map[string]baseline{
		"read1k": {"ssh (ControlMaster) cat", func(ctx context.Context, _ *toggle) error {
			return run(ctx, nil, "cat lat/r1k.txt")
		}},
		"write1k": {"ssh (ControlMaster) 'cat >'", func(ctx context.Context, _ *toggle) error {
			return run(ctx, []byte(kib), "cat > lat/w-base.txt")
		}},
		"edit": {"ssh (ControlMaster) sed -i", func(ctx context.Context, t *toggle) error {
			o, n := t.pair()
			return run(ctx, nil, "sed -i 's/line "+o+"/line "+n+"/' lat/e-base.txt")
		}},
		"true": {"ssh (ControlMaster) true", func(ctx context.Context, _ *toggle) error {
			return run(ctx, nil, "true")
		}},
		"ls100": {"ssh (ControlMaster) ls", func(ctx context.Context, _ *toggle) error {
			return run(ctx, nil, "ls -a lat/d100")
		}},
		"grep10k": {"ssh (ControlMaster) rg -n", func(ctx context.Context, _ *toggle) error {
			return run(ctx, nil, "if command -v rg >/dev/null; then rg -n needle tree; else grep -rn needle tree; fi")
		}},
	}, stop, nil
}

func controlArgs(e *env) []string {
	return []string{"-o", "ControlMaster=auto", "-o", "ControlPath=" + filepath.Join(e.sshd.Dir, "cm-%C"), "-o", "ControlPersist=300"}
}

// extraBaselines are the round trips the brief names beside the per-op
// ones: the transport's own floor.
func extraBaselines(ctx context.Context, e *env) map[string]func(context.Context) error {
	switch e.name {
	case "docker":
		cli, err := engineClient(e.dockerHost)
		if cli == nil && err == nil {
			cli, err = docker.NewClient()
		}
		if err != nil {
			return nil
		}
		return map[string]func(context.Context) error{
			"Engine API exec true (moby client: create, attach, inspect)": func(ctx context.Context) error {
				return rawEngineExec(ctx, cli, e.container, e.user, []string{"true"})
			},
			"Engine API exec cat 1 KiB": func(ctx context.Context) error {
				return rawEngineExec(ctx, cli, e.container, e.user, []string{"cat", e.path("lat/r1k.txt")})
			},
		}
	case "ssh":
		fresh := []string{"-o", "ControlMaster=no", "-o", "ControlPath=none"}
		conn, err := rawSSHDial(e)
		if err != nil {
			return map[string]func(context.Context) error{"x/crypto/ssh dial": func(context.Context) error { return err }}
		}
		return map[string]func(context.Context) error{
			"ssh true (fresh connection)": func(ctx context.Context) error {
				_, err := runExt(ctx, nil, "ssh", e.sshArgs(fresh, "true")...)
				return err
			},
			"ssh cat 1 KiB (fresh connection)": func(ctx context.Context) error {
				_, err := runExt(ctx, nil, "ssh", e.sshArgs(fresh, "cat "+e.path("lat/r1k.txt"))...)
				return err
			},
			"x/crypto/ssh session true (open connection)": func(context.Context) error {
				s, err := conn.NewSession()
				if err != nil {
					return err
				}
				defer s.Close()
				return s.Run("true")
			},
			"x/crypto/ssh session cat 1 KiB (open connection)": func(context.Context) error {
				s, err := conn.NewSession()
				if err != nil {
					return err
				}
				defer s.Close()
				_, err = s.Output("cat " + e.path("lat/r1k.txt"))
				return err
			},
		}
	}
	return nil
}

// rawEngineExec is one exec round trip on the Engine API, as ops/docker
// does it minus the wrapper: create, attach (which starts it), demux to
// the end, inspect for the exit code.
func rawEngineExec(ctx context.Context, cli *client.Client, ctr, user string, argv []string) error {
	cr, err := cli.ExecCreate(ctx, ctr, client.ExecCreateOptions{User: user, AttachStdout: true, AttachStderr: true, Cmd: argv})
	if err != nil {
		return err
	}
	ar, err := cli.ExecAttach(ctx, cr.ID, client.ExecAttachOptions{})
	if err != nil {
		return err
	}
	defer ar.Close()
	if _, err := stdcopy.StdCopy(io.Discard, io.Discard, ar.Reader); err != nil {
		return err
	}
	for {
		r, err := cli.ExecInspect(ctx, cr.ID, client.ExecInspectOptions{})
		if err != nil {
			return err
		}
		if !r.Running {
			if r.ExitCode != 0 {
				return fmt.Errorf("exit %d", r.ExitCode)
			}
			return nil
		}
		time.Sleep(time.Millisecond)
	}
}

func rawSSHDial(e *env) (*ssh.Client, error) {
	s := e.sshd
	key, err := os.ReadFile(s.IdentityFile)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return nil, err
	}
	return ssh.Dial("tcp", s.Host+":"+strconv.Itoa(s.Port), &ssh.ClientConfig{
		User:            s.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(s.HostKey),
		Timeout:         10 * time.Second,
	})
}
