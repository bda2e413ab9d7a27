package main

import (
	"context"
	"errors"
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

// runDoctor is `pi-sandbox doctor`: one line per check; exit 1 when one
// failed.
func runDoctor(ctx context.Context, args []string, io stdio) int {
	if len(args) > 0 && strings.HasPrefix(strings.TrimLeft(args[0], "-"), "backend") {
		return doctorK8s(ctx, args, io)
	}
	if len(args) > 0 {
		fmt.Fprintln(io.err, "usage: pi-sandbox doctor [--backend k8s ...]")
		if args[0] == "-h" || args[0] == "--help" {
			return 0
		}
		return 2
	}
	env := &doctorEnv{}
	defer env.close()
	checks := append([]doctorCheck(nil), doctorChecks...)
	sort.SliceStable(checks, func(i, j int) bool { return checks[i].order < checks[j].order })
	code := 0
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
	p, err := shim.HostBinary()
	if err != nil {
		return "", err
	}
	arch := "amd64"
	if _, err := env.docker(ctx); err == nil && env.arch != "" {
		arch = env.arch
	}
	if err := docker.CheckShimBinary(p, arch); err != nil {
		return "", &doctorWarning{fmt.Sprintf("%s cannot run in the engine's containers (%v): sessions there use the fallback path without the helper, and a process that calls setsid survives a kill", p, err)}
	}
	return fmt.Sprintf("%s (static, linux/%s)", p, arch), nil
}
