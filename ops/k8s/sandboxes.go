package k8s

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pi-sandbox/pi-sandbox/ops/internal/target"
)

// Up creates a long-lived hardened pod from cfg.Image (kind "sandbox",
// deleted only by Down or gc --all), waits for it to run and returns its
// name. Use it later with Config.Pod.
func Up(ctx context.Context, cfg Config) (string, error) {
	if cfg.Image == "" {
		return "", ErrNoTarget
	}
	if err := cfg.validate(); err != nil {
		return "", err
	}
	c, err := NewClient(cfg)
	if err != nil {
		return "", err
	}
	cfg.fillImageDefaults()
	name, _, err := createPod(ctx, c, &cfg, KindSandbox)
	return name, err
}

// Down deletes a pod this package created and returns once it is gone. A
// pod without our label is refused.
func Down(ctx context.Context, c *Client, name string) error {
	p, err := c.api.getPod(ctx, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("k8s: no pod %q in namespace %s", name, c.Namespace)
		}
		return apiErr("get pod", err)
	}
	if p.Labels[LabelManaged] != "true" {
		return fmt.Errorf("k8s: pod %q was not created by pi-sandbox (no %s label)", name, LabelManaged)
	}
	if claim := p.Labels[LabelClaim]; claim != "" {
		return downClaim(ctx, c, name, claim)
	}
	if pool := p.Labels[LabelPool]; pool != "" {
		return fmt.Errorf("k8s: pod %q is an idle member of pool %s (its warm pool would replace it): pi-sandbox pool drain --backend k8s %s removes the pool's idle members", name, pool, pool)
	}
	return deletePodCtx(ctx, c, name, true)
}

// Sandbox is one of our pods, as List reports it.
type Sandbox struct {
	Name, Image, Kind, Phase, Status string
	Created                          time.Time
	Labels                           map[string]string
}

// List returns our pods (LabelManaged) matching the extra label selectors
// ("key=value"), except those being deleted.
func List(ctx context.Context, c *Client, selectors ...string) ([]Sandbox, error) {
	sel := strings.Join(append([]string{LabelManaged + "=true"}, selectors...), ",")
	res, err := c.api.listPods(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, apiErr("list pods", err)
	}
	var out []Sandbox
	for _, p := range res.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		s := Sandbox{Name: p.Name, Kind: p.Labels[LabelKind], Phase: string(p.Status.Phase), Status: podState(&p),
			Created: p.CreationTimestamp.Time, Labels: p.Labels}
		if len(p.Spec.Containers) > 0 {
			s.Image = p.Spec.Containers[0].Image
		}
		out = append(out, s)
	}
	return out, nil
}

// Leaked reports whether s is garbage: ended, or ephemeral and its creating
// process on this host is gone, or ephemeral from another host and older
// than maxAge.
func Leaked(s Sandbox, maxAge time.Duration) bool {
	if s.Phase == string(corev1.PodFailed) || s.Phase == string(corev1.PodSucceeded) {
		return true
	}
	if s.Kind != KindEphemeral {
		return false
	}
	host, _ := os.Hostname()
	if s.Labels[LabelHost] == labelValue(host) {
		pid, err := strconv.Atoi(s.Labels[LabelPID])
		return err != nil || !target.ProcessAlive(pid)
	}
	return time.Since(s.Created) > maxAge
}

// GC deletes our leaked pods (see Leaked) — all of ours when all is set —
// and returns their names.
func GC(ctx context.Context, c *Client, all bool, maxAge time.Duration) ([]string, error) {
	list, err := List(ctx, c)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, s := range list {
		if !all && !Leaked(s, maxAge) {
			continue
		}
		// A pool's pods belong to its warm pool (pool drain) or to a
		// claim, whose deletion removes the pod.
		if claim := s.Labels[LabelClaim]; claim != "" {
			if err := c.asDelete(ctx, "sandboxclaims", claim); err != nil && !apierrors.IsNotFound(err) {
				return removed, asErr("delete sandbox claim", "sandboxclaims", err)
			}
			removed = append(removed, s.Name)
			continue
		}
		if s.Labels[LabelPool] != "" {
			continue
		}
		if err := deletePodCtx(ctx, c, s.Name, false); err != nil {
			return removed, err
		}
		removed = append(removed, s.Name)
	}
	return removed, nil
}
