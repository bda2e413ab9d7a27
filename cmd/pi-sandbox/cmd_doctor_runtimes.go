package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

func init() {
	registerDoctorCheck(doctorCheck{order: 15, name: "runtimes", run: checkRuntimes})
}

// checkRuntimes lists the engine's OCI runtimes (for --runtime), marking the
// default, and says how to add gVisor when runsc is missing.
func checkRuntimes(ctx context.Context, env *doctorEnv) (string, error) {
	cli, err := env.docker(ctx)
	if err != nil {
		return "", &doctorWarning{"skipped: no engine"}
	}
	res, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return "", fmt.Errorf("docker: info: %w", err)
	}
	return runtimesDetail(docker.RuntimeNames(res.Info.Runtimes), res.Info.DefaultRuntime), nil
}

// runtimesDetail is the doctor line: "runc (default), runsc".
func runtimesDetail(names []string, def string) string {
	var parts []string
	gvisor := false
	for _, n := range names {
		if n == "runsc" {
			gvisor = true
		}
		if n == def {
			n += " (default)"
		}
		parts = append(parts, n)
	}
	s := strings.Join(parts, ", ")
	if !gvisor {
		s += "; no runsc (gVisor): `make runtimes` registers it"
	}
	return s
}
