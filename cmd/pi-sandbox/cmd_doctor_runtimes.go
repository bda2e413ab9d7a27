package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

func init() {
	registerDoctorCheck(doctorCheck{order: 15, name: "runtimes", run: checkRuntimes})
}

// checkRuntimes lists the engine's OCI runtimes (for --runtime), marking the
// default; for runsc it adds gVisor's version and what its network flag
// means, and it says how to add gVisor when runsc is missing.
func checkRuntimes(ctx context.Context, env *doctorEnv) (string, error) {
	cli, err := env.docker(ctx)
	if err != nil {
		return "", &doctorWarning{"skipped: no engine"}
	}
	res, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return "", fmt.Errorf("docker: info: %w", err)
	}
	var gvisor *runscInfo
	if r, ok := res.Info.Runtimes["runsc"]; ok {
		gvisor = &runscInfo{version: runscVersion(ctx, r.Path), args: r.Args}
	}
	return runtimesDetail(docker.RuntimeNames(res.Info.Runtimes), res.Info.DefaultRuntime, gvisor), nil
}

// runscInfo is what the doctor line says of the runtime runsc.
type runscInfo struct {
	version string   // gVisor's, or why it is unknown
	args    []string // the engine's runtime args for it
}

// runtimesDetail is the doctor line: "runc (default), runsc (gVisor V; …)".
func runtimesDetail(names []string, def string, gvisor *runscInfo) string {
	var parts []string
	for _, n := range names {
		s := n
		if n == def {
			s += " (default)"
		}
		if n == "runsc" && gvisor != nil {
			s += " (" + gvisor.detail() + ")"
		}
		parts = append(parts, s)
	}
	s := strings.Join(parts, ", ")
	if gvisor == nil {
		s += "; no runsc (gVisor): `make runtimes` registers it"
	}
	return s
}

func (g *runscInfo) detail() string {
	s := "gVisor " + g.version
	if len(g.args) > 0 {
		s += ", runtime args " + strings.Join(g.args, " ")
	}
	if slices.Contains(g.args, "--network=none") {
		s += "; AllowNetwork has no effect under runsc with --network=none: the sandbox has only a loopback interface"
	}
	return s
}

// runscVersionTimeout bounds `runsc --version`.
var runscVersionTimeout = 5 * time.Second

// runscVersion asks the engine's runsc binary (on this host, when the engine
// is local) for its version: "runsc version V" is the first line of its
// --version.
func runscVersion(ctx context.Context, path string) string {
	if path == "" {
		return "version unknown (the engine names no path)"
	}
	ctx, cancel := context.WithTimeout(ctx, runscVersionTimeout)
	defer cancel()
	var out cappedBuffer
	out.max = 4096
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Stdout = &out
	cmd.WaitDelay = time.Second // a child of it holding stdout open does not hold the doctor
	if err := cmd.Run(); err != nil {
		return fmt.Sprintf("version unknown (%s --version: %v)", path, err)
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	v, ok := strings.CutPrefix(strings.TrimSpace(line), "runsc version ")
	if !ok || v == "" {
		return fmt.Sprintf("version unknown (%s --version printed %q)", path, line)
	}
	return v
}

// cappedBuffer keeps the first max bytes written to it and discards the rest.
type cappedBuffer struct {
	strings.Builder
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Builder.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
