package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/images"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

func init() {
	register("doctor", &command{summary: "check the engine, images, sshd and shim", run: runDoctor})
	registerDoctorCheck(doctorCheck{order: 10, name: "engine", run: checkEngine})
	registerDoctorCheck(doctorCheck{order: 20, name: "images", run: checkImages})
	registerDoctorCheck(doctorCheck{order: 30, name: "shim", run: checkShim})
}

// doctorCheck is one line of `pi-sandbox doctor`. Other files add theirs
// (the ssh checks) with registerDoctorCheck from an init function.
type doctorCheck struct {
	order int // position in the report
	name  string
	// run returns a detail for the report, or an error: a *doctorWarning
	// for a problem that does not stop pi-sandbox from working.
	run func(ctx context.Context, env *doctorEnv) (string, error)
}

// doctorWarning is a non-fatal finding.
type doctorWarning struct{ msg string }

func (w *doctorWarning) Error() string { return w.msg }

var doctorChecks []doctorCheck

func registerDoctorCheck(c doctorCheck) { doctorChecks = append(doctorChecks, c) }

// doctorEnv holds what checks share, made on first use.
type doctorEnv struct {
	once    sync.Once
	cli     *client.Client
	cliErr  error
	arch    string
	version string
	api     string
}

// docker returns a client that answered a ping.
func (e *doctorEnv) docker(ctx context.Context) (*client.Client, error) {
	e.once.Do(func() {
		cli, err := docker.NewClient()
		if err != nil {
			e.cliErr = err
			return
		}
		if e.api, err = docker.Ping(ctx, cli); err != nil {
			cli.Close()
			e.cliErr = err
			return
		}
		if v, err := cli.ServerVersion(ctx, client.ServerVersionOptions{}); err == nil {
			e.arch, e.version = v.Arch, v.Version
		}
		e.cli = cli
	})
	return e.cli, e.cliErr
}

func (e *doctorEnv) close() {
	if e.cli != nil {
		e.cli.Close()
	}
}

// runDoctor is `pi-sandbox doctor [--backend k8s ...]`: one line per
// check; exit 1 when one failed.
func runDoctor(ctx context.Context, args []string, io stdio) int {
	f := newFlagSet("doctor", "[flags]", io)
	f.about = "Checks what pi-sandbox needs and prints one line per check (ok, warn or FAIL); exits 1\nwhen a check failed. Docker (the default): the engine, gVisor and the other runtimes,\nthe images, sshd and the helper binary. --backend k8s: the cluster, the permissions, a\ntest pod from --image, and the helper binary."
	var kf k8sFlags
	kf.register(f.FlagSet)
	image := f.String("image", "pi-sandbox/debian", "k8s: the `IMAGE` of the test pod")
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		return f.usageError("takes no arguments")
	}
	if msg := kf.check(); msg != "" {
		return f.usageError("%s", msg)
	}
	if kf.backend == "k8s" {
		return doctorK8s(ctx, &kf, *image, io)
	}
	imageSet := false
	f.Visit(func(fl *flag.Flag) { imageSet = imageSet || fl.Name == "image" })
	if imageSet {
		return f.usageError("--image needs --backend k8s")
	}
	env := &doctorEnv{}
	defer env.close()
	checks := append([]doctorCheck(nil), doctorChecks...)
	sort.SliceStable(checks, func(i, j int) bool { return checks[i].order < checks[j].order })
	code = 0
	for _, c := range checks {
		detail, err := c.run(ctx, env)
		var w *doctorWarning
		switch {
		case errors.As(err, &w):
			fmt.Fprintf(io.out, "warn  %-8s %s\n", c.name, escapeControls(w.msg, true))
		case err != nil:
			fmt.Fprintf(io.out, "FAIL  %-8s %s\n", c.name, escapeControls(err.Error(), true))
			code = 1
		default:
			fmt.Fprintf(io.out, "ok    %-8s %s\n", c.name, escapeControls(detail, true))
		}
	}
	return code
}

func checkEngine(ctx context.Context, env *doctorEnv) (string, error) {
	cli, err := env.docker(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s, API %s (engine %s, %s)", cli.DaemonHost(), env.api, env.version, env.arch), nil
}

func checkImages(ctx context.Context, env *doctorEnv) (string, error) {
	cli, err := env.docker(ctx)
	if err != nil {
		return "", &doctorWarning{"skipped: no engine"}
	}
	b := &images.Builder{Client: cli}
	st, err := b.Check(ctx, images.Names()...)
	if err != nil {
		return "", err
	}
	var have, missing []string
	for _, s := range st {
		if s.Present {
			have = append(have, s.Ref)
		} else {
			missing = append(missing, s.Ref)
		}
	}
	if len(missing) > 0 {
		return "", &doctorWarning{"missing " + strings.Join(missing, ", ") + " (run `pi-sandbox image build`)"}
	}
	return strings.Join(have, ", "), nil
}

func checkShim(ctx context.Context, env *doctorEnv) (string, error) {
	// No usable binary fails every docker, ssh and k8s session (the same
	// error they give): a failure here, not a warning.
	bins, err := shim.FindBinaries("")
	if err != nil {
		return "", err
	}
	have := helperArches(bins)
	cli, err := env.docker(ctx)
	if err != nil || env.arch == "" {
		return have, nil
	}
	// Containers we create always run the helper: without a binary for the
	// engine's architecture --image, up and pool sessions are refused (an
	// existing --container runs on the fallback).
	if _, err := bins.For(env.arch); err != nil {
		return "", fmt.Errorf("%w: --image, up and pool sessions on this engine (linux/%s) are refused, and an existing --container runs on the fallback path (one exec per operation; a process that calls setsid survives a kill)", err, env.arch)
	}
	how := "uploaded into each container"
	if res, err := cli.Info(ctx, client.InfoOptions{}); err == nil && docker.EngineOnThisHost(cli.DaemonHost(), res.Info.Name) {
		how = "bind-mounted read-only into the containers pi-sandbox creates (the engine is on this host), uploaded into others"
	}
	return have + "; " + how, nil
}

// helperArches lists the static helper binaries of this machine for the
// architectures make build makes ("linux/amd64 PATH, linux/arm64 none").
func helperArches(bins *shim.Binaries) string {
	var have []string
	for _, a := range []string{"amd64", "arm64"} {
		p := "none"
		if u, err := bins.For(a); err == nil {
			p = u.Path
		}
		have = append(have, "linux/"+a+" "+p)
	}
	return strings.Join(have, ", ")
}
