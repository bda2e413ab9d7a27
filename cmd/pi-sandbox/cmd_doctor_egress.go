package main

import (
	"context"
	"net"

	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

func init() {
	registerDoctorCheck(doctorCheck{order: 36, name: "egress", run: checkEgress})
}

// checkEgress says where network allow rules (--allow-host) are enforced:
// the egress proxy listens on the target's loopback, which on this host
// (local) and on ssh hosts other users share.
func checkEgress(ctx context.Context, env *doctorEnv) (string, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", &doctorWarning{"the egress proxy cannot listen on this host's loopback: " + err.Error()}
	}
	ln.Close()
	return "local and ssh: " + sandbox.AdvisoryEgress + "; docker, Podman, gVisor and k8s sandboxes (no network) have no other way out", nil
}
