package open

import (
	"fmt"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
)

// checkDocker checks what the docker backend would refuse before anything
// is created: the syntax of --mount and --user, and that the mount sources
// exist (when the engine runs on this host).
func checkDocker(c Config) error {
	dc, err := dockerConfig(c)
	if err != nil {
		return ops.ConfigError("open: %w", err)
	}
	if err := dc.Validate(); err != nil {
		return fmt.Errorf("open: %w", err)
	}
	return nil
}

// checkK8s checks the syntax of --mount and --user (numeric: a pod cannot
// name a user) for the k8s backend. A hostPath is on the node, which need
// not be this host: its existence is the node's to check.
func checkK8s(c Config) error {
	k := c.k8s()
	for _, m := range k.Mounts {
		if _, err := k8s.ParseMount(m); err != nil {
			return ops.ConfigError("open: %w", err)
		}
	}
	if k.User != "" {
		if err := k8s.CheckUser(k.User); err != nil {
			return fmt.Errorf("open: --user: %w", err)
		}
	}
	return nil
}
