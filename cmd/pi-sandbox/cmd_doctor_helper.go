package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops/local"
)

func init() {
	registerDoctorCheck(doctorCheck{order: 35, name: "helper", run: checkHelper})
}

// checkHelper starts the in-target helper on this machine, the way the
// local backend does, and reports whether it runs (and why not).
func checkHelper(ctx context.Context, env *doctorEnv) (string, error) {
	dir, err := os.MkdirTemp("", "pi-sandbox-doctor-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	b, err := local.New(ctx, local.Config{WorkDir: dir})
	if err != nil {
		return "", err
	}
	defer b.Close()
	info := b.Info()
	if !info.Has("helper") {
		return "", &doctorWarning{"the helper does not run here: " + strings.Join(info.Limits, "; ")}
	}
	detail := "runs locally"
	if h := b.Helper(); h != nil {
		hello := h.Hello()
		detail = fmt.Sprintf("runs locally (protocol %d)", hello.Version)
		if hello.Build != "" {
			detail = fmt.Sprintf("runs locally (build %.12s, protocol %d)", hello.Build, hello.Version)
		}
	}
	return detail + "; in containers and over ssh it starts once per sandbox", nil
}
