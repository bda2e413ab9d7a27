package k8s

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// LabelForkOf marks a pod made by fork with the name of the pod it was
// forked from.
const LabelForkOf = "pi-sandbox.fork-of"

// ForkConfig is the configuration of a new up pod like pod name (an up
// sandbox): its image, working directory, user, memory, CPU,
// ephemeral-storage and /tmp limits, root file system, runtime class and
// labels, with a fresh emptyDir working directory in place of any
// hostPath mount. The client's kubeconfig, context and namespace are
// base's.
func ForkConfig(ctx context.Context, c *Client, base Config, name string) (Config, error) {
	p, err := c.api.getPod(ctx, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return Config{}, fmt.Errorf("k8s: fork: no pod %q in namespace %s", name, c.Namespace)
		}
		return Config{}, apiErr("get pod", err)
	}
	if p.Labels[LabelManaged] != "true" || p.Labels[LabelKind] != KindSandbox || len(p.Spec.Containers) != 1 {
		return Config{}, fmt.Errorf("k8s: fork: pod %q is not a pi-sandbox up sandbox (pi-sandbox up --backend k8s makes one)", name)
	}
	ct := p.Spec.Containers[0]
	cfg := base
	cfg.Image, cfg.WorkDir = ct.Image, ct.WorkingDir
	if psc := p.Spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil && psc.RunAsGroup != nil {
			cfg.User = strconv.FormatInt(*psc.RunAsUser, 10) + ":" + strconv.FormatInt(*psc.RunAsGroup, 10)
		}
		cfg.AllowRoot = psc.RunAsNonRoot == nil
		cfg.SeccompUnconfined = psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined
	}
	cfg.Memory, cfg.CPUs, cfg.EphemeralStorage = -1, -1, -1
	if q, ok := ct.Resources.Limits[corev1.ResourceMemory]; ok {
		cfg.Memory = q.Value()
	}
	if q, ok := ct.Resources.Limits[corev1.ResourceCPU]; ok {
		cfg.CPUs = float64(q.MilliValue()) / 1000
	}
	if q, ok := ct.Resources.Limits[corev1.ResourceEphemeralStorage]; ok {
		cfg.EphemeralStorage = q.Value()
	}
	for _, v := range p.Spec.Volumes {
		if v.Name == "tmp" && v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
			cfg.TmpSize = v.EmptyDir.SizeLimit.Value()
		}
	}
	if sc := ct.SecurityContext; sc != nil {
		cfg.WritableRootfs = sc.ReadOnlyRootFilesystem != nil && !*sc.ReadOnlyRootFilesystem
	}
	if p.Spec.RuntimeClassName != nil {
		cfg.RuntimeClassName = *p.Spec.RuntimeClassName
	}
	cfg.Labels = map[string]string{}
	for k, v := range p.Labels {
		switch k {
		case LabelManaged, LabelKind, LabelHost, LabelPID, LabelForkOf:
		default:
			cfg.Labels[k] = v
		}
	}
	cfg.Labels[LabelForkOf] = labelValue(name)
	return cfg, nil
}
