package open

import (
	"context"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
)

// openK8s opens the k8s backend: --image IMG (an ephemeral hardened pod,
// deleted by Close) or --pod NAME (an existing pod, used as it is), with
// --mount (hostPath), --user, --workdir, --kubeconfig, --context,
// --namespace and --k8s-container.
func openK8s(ctx context.Context, cfg Config) (ops.Backend, error) {
	kc, err := K8sBackendConfig(cfg)
	if err != nil {
		return nil, err
	}
	return k8s.New(ctx, kc)
}

// K8sBackendConfig is the k8s.Config cfg describes (the shared --image,
// --mount and --user included).
func K8sBackendConfig(cfg Config) (k8s.Config, error) {
	k := cfg.k8s()
	kc := k8s.Config{
		Kubeconfig:    k.Kubeconfig,
		Context:       k.Context,
		Namespace:     k.Namespace,
		Image:         k.Image,
		Pod:           k.Pod,
		AgentSandbox:  k.AgentSandbox,
		Container:     k.Container,
		User:          k.User,
		WorkDir:       cfg.WorkDir,
		MaxBackground: cfg.MaxBackground,
		NoHelper:      cfg.NoHelper,
		Note:          cfg.Note,
		// An explicit uid 0 is the relaxation that runs the pod as root.
		AllowRoot: strings.HasPrefix(k.User, "0:") || k.User == "0",
	}
	for _, m := range k.Mounts {
		pm, err := k8s.ParseMount(m)
		if err != nil {
			return kc, err
		}
		kc.Mounts = append(kc.Mounts, pm)
	}
	return kc, nil
}
