package k8s

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	asv1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Labels of pools on Kubernetes.
const (
	// LabelPool names the pool of a SandboxTemplate, SandboxWarmPool,
	// SandboxClaim and their pods (kept after a claim).
	LabelPool = "pi-sandbox.pool"
	// LabelPoolHash is the hash of a template's pod spec: a changed
	// configuration updates the template (and the warm pool recreates
	// its idle members).
	LabelPoolHash = "pi-sandbox.pool-hash"
	// LabelClaim names, on a claimed pod, the SandboxClaim that owns it.
	LabelClaim = "pi-sandbox.claim"
	// LabelTTL on a warm pool is how long a claimed member lives (a Go
	// duration): each claim's shutdown time.
	LabelTTL = "pi-sandbox.ttl"
)

// Bounds of pool calls that wait for the controller.
const (
	poolFillWait  = 5 * time.Minute
	claimWait     = 3 * time.Minute
	controllerHey = 20 * time.Second // a claim with no status after this: no controller
)

var poolNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// CheckPoolName refuses a name that cannot name the pool's objects (and
// prefix its claims' names).
func CheckPoolName(name string) error {
	if !poolNameRE.MatchString(name) {
		return ops.ConfigError("k8s: pool name %q: want lower-case letters, digits and '-' (at most 40, starting and ending with a letter or digit)", name)
	}
	return nil
}

// PoolFill creates or updates pool's SandboxTemplate (the hardened pod of
// cfg, kind sandbox) and SandboxWarmPool of size members, waits until size
// members are ready and returns the names of the pods that joined the
// pool during the call. ttl > 0 is each claimed member's lifetime (the
// claim's shutdown time). note gets progress lines.
func PoolFill(ctx context.Context, cfg Config, pool string, size int, ttl time.Duration, note func(string)) ([]string, error) {
	if err := CheckPoolName(pool); err != nil {
		return nil, err
	}
	if cfg.Image == "" {
		return nil, ErrNoTarget
	}
	if len(cfg.Mounts) > 0 {
		return nil, ops.ConfigError("k8s: a pool's configuration has no mounts (every claim would share the host directory)")
	}
	if size < 0 || ttl < 0 {
		return nil, ops.ConfigError("k8s: pool size %d or ttl %s is negative", size, ttl)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.fillImageDefaults()
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, poolFillWait)
	defer cancel()
	before, err := idleMembers(ctx, c, pool)
	if err != nil {
		return nil, err
	}
	known, all := nodesUserns(ctx, c)
	pod := hardenedPod(&cfg, KindSandbox, "", !cfg.NoUserNamespace && known && all)
	delete(pod.Annotations, AnnotationHelperKey) // each claim gets its own
	pod.Labels[LabelPool] = pool
	spec, _ := json.Marshal(pod.Spec)
	sum := sha256.Sum256(append(spec, []byte(fmt.Sprint(pod.Labels))...))
	hash := hex.EncodeToString(sum[:8])
	meta := metav1.ObjectMeta{Name: pool, Labels: map[string]string{LabelManaged: "true", LabelPool: pool, LabelPoolHash: hash}}
	for k, v := range cfg.Labels {
		meta.Labels[k] = v
	}
	tmpl := &extv1.SandboxTemplate{ObjectMeta: meta, Spec: extv1.SandboxTemplateSpec{
		SandboxBlueprint: asv1.SandboxBlueprint{PodTemplate: asv1.PodTemplate{
			ObjectMeta: asv1.PodMetadata{Labels: pod.Labels},
			Spec:       pod.Spec,
		}},
		// The pod has no network of its own to police (the helper's stream
		// is its way in and out).
		NetworkPolicyManagement: extv1.NetworkPolicyManagementUnmanaged,
	}}
	var old extv1.SandboxTemplate
	changed, err := c.asEnsure(ctx, "sandboxtemplates", "sandbox template", tmpl, &old, func() bool { return old.Labels[LabelPoolHash] == hash })
	if err != nil {
		return nil, err
	}
	if changed {
		note(fmt.Sprintf("pool %s: the configuration changed: the template is updated and its idle members replaced", pool))
	}
	n := int32(size)
	wp := &extv1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: pool, Labels: map[string]string{LabelManaged: "true", LabelPool: pool}},
		Spec: extv1.SandboxWarmPoolSpec{Replicas: &n, TemplateRef: extv1.SandboxTemplateRef{Name: pool},
			UpdateStrategy: &extv1.SandboxWarmPoolUpdateStrategy{Type: extv1.RecreateSandboxWarmPoolUpdateStrategyType}},
	}
	if ttl > 0 {
		wp.Labels[LabelTTL] = ttl.String()
	}
	var cur extv1.SandboxWarmPool
	if _, err := c.asEnsure(ctx, "sandboxwarmpools", "sandbox warm pool", wp, &cur, func() bool {
		return cur.Spec.Replicas != nil && *cur.Spec.Replicas == n && cur.Labels[LabelTTL] == wp.Labels[LabelTTL]
	}); err != nil {
		return nil, err
	}
	ready, last := 0, -1
	for {
		members, err := idleMembers(ctx, c, pool)
		if err != nil {
			return nil, err
		}
		ready = 0
		for _, p := range members {
			if p.Status.Phase == corev1.PodRunning && containersReady(&p) {
				ready++
			}
		}
		if ready != last {
			note(fmt.Sprintf("pool %s: %d of %d idle members ready", pool, ready, size))
			last = ready
		}
		if ready >= size {
			var joined []string
			for _, p := range members {
				if !slices.ContainsFunc(before, func(b corev1.Pod) bool { return b.Name == p.Name }) {
					joined = append(joined, p.Name)
				}
			}
			return joined, warmHelpers(ctx, cfg, c, members, note)
		}
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return nil, fmt.Errorf("k8s: pool %s: %d of %d members ready when the wait ended (is the agent-sandbox controller running with --extensions?): %w", pool, ready, size, err)
		}
	}
}

// idleMembers are the pool's pods that no claim took (being deleted
// ones left out).
func idleMembers(ctx context.Context, c *Client, pool string) ([]corev1.Pod, error) {
	res, err := c.api.listPods(ctx, metav1.ListOptions{LabelSelector: LabelManaged + "=true," + LabelPool + "=" + pool + ",!" + LabelClaim + ",!" + extv1.SandboxIDLabel})
	if err != nil {
		return nil, apiErr("list pods", err)
	}
	var out []corev1.Pod
	for _, p := range res.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// Claim creates a SandboxClaim on pool's warm pool and returns the pod of
// the Sandbox the controller gives it: running, labelled with the claim
// and holding a helper key of its own. ttl > 0, else the pool's
// (LabelTTL), sets the claim's shutdown time: the controller then deletes
// the sandbox.
func Claim(ctx context.Context, cfg Config, pool string, ttl time.Duration) (string, error) {
	if err := CheckPoolName(pool); err != nil {
		return "", err
	}
	c, err := NewClient(cfg)
	if err != nil {
		return "", err
	}
	var wp extv1.SandboxWarmPool
	if err := c.asGet(ctx, "sandboxwarmpools", pool, &wp); err != nil {
		if noObject(err) {
			return "", ops.ConfigError("k8s: no pool %q in namespace %s (pi-sandbox pool fill --backend k8s %s --size N makes one)", pool, c.Namespace, pool)
		}
		return "", asErr("get sandbox warm pool", "sandboxwarmpools", err)
	}
	claim := &extv1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pool + "-", Labels: map[string]string{LabelManaged: "true", LabelPool: pool}},
		Spec:       extv1.SandboxClaimSpec{WarmPoolRef: extv1.SandboxWarmPoolRef{Name: pool}},
	}
	if ttl <= 0 {
		ttl, _ = time.ParseDuration(wp.Labels[LabelTTL])
	}
	if ttl > 0 {
		at := metav1.NewTime(time.Now().Add(ttl))
		claim.Spec.Lifecycle = &extv1.Lifecycle{ShutdownTime: &at, ShutdownPolicy: extv1.ShutdownPolicyDelete}
	}
	var made extv1.SandboxClaim
	if err := c.asCreate(ctx, "sandboxclaims", claim, &made); err != nil {
		return "", asErr("create sandbox claim", "sandboxclaims", err)
	}
	pod, err := claimedPod(ctx, c, made.Name)
	if err != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		c.asDelete(dctx, "sandboxclaims", made.Name)
		return "", err
	}
	return pod, nil
}

// claimedPod waits for claim's sandbox and its running pod, and marks the
// pod as the claim's with a fresh helper key.
func claimedPod(ctx context.Context, c *Client, claim string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, claimWait)
	defer cancel()
	start := time.Now()
	var cl extv1.SandboxClaim
	for {
		if err := c.asGet(ctx, "sandboxclaims", claim, &cl); err != nil {
			return "", asErr("get sandbox claim", "sandboxclaims", err)
		}
		if cl.Status.SandboxStatus.Name != "" {
			break
		}
		if len(cl.Status.Conditions) == 0 && time.Since(start) > controllerHey {
			return "", fmt.Errorf("k8s: sandbox claim %s has no status after %s: is the agent-sandbox controller running with --extensions (make cluster runs one; see docs/pools.md)?", claim, controllerHey)
		}
		if err := sleepCtx(ctx, claimPoll(start)); err != nil {
			return "", fmt.Errorf("k8s: sandbox claim %s got no sandbox: %w", claim, err)
		}
	}
	// The pod is named as its Sandbox, but for one that adopted a pod of
	// an older controller (its pod-name annotation): looked up on a miss.
	name, resolved := cl.Status.SandboxStatus.Name, false
	for {
		p, err := c.api.getPod(ctx, name)
		switch {
		case err != nil && !apierrors.IsNotFound(err):
			return "", apiErr("get pod", err)
		case err != nil && !resolved:
			resolved = true
			if name, err = SandboxPod(ctx, c, cl.Status.SandboxStatus.Name); err != nil {
				return "", err
			}
			continue
		case err == nil && p.DeletionTimestamp == nil:
			if err := startFailure(p); err != nil {
				return "", err
			}
			if p.Status.Phase == corev1.PodRunning && containersReady(p) {
				// A member pool fill warmed has its key and daemon; one
				// the warm pool made since gets its key now (and its
				// daemon with the first call).
				ann := map[string]string{}
				if p.Annotations[AnnotationHelperKey] == "" {
					ann[AnnotationHelperKey] = newHelperKey()
				}
				if err := c.patchPodMeta(ctx, name, map[string]string{LabelClaim: claim}, ann); err != nil {
					return "", apiErr("label the claimed pod", err)
				}
				return name, nil
			}
		}
		if err := sleepCtx(ctx, claimPoll(start)); err != nil {
			return "", fmt.Errorf("k8s: the pod %s of sandbox claim %s is not running: %w", name, claim, err)
		}
	}
}

// warmHelpers starts the helper daemon in each ready member that has no
// helper key yet (a key of its own first), as up pods have it: a claim of
// it then reaches the daemon with its first call.
func warmHelpers(ctx context.Context, cfg Config, c *Client, members []corev1.Pod, note func(string)) error {
	var wg sync.WaitGroup
	errs := make([]error, len(members))
	for i, p := range members {
		if p.Annotations[AnnotationHelperKey] != "" || p.Status.Phase != corev1.PodRunning {
			continue
		}
		wg.Go(func() {
			if err := c.patchPodMeta(ctx, p.Name, nil, map[string]string{AnnotationHelperKey: newHelperKey()}); err != nil {
				errs[i] = apiErr("give the member a helper key", err)
				return
			}
			mc := Config{Kubeconfig: cfg.Kubeconfig, Context: cfg.Context, Namespace: c.Namespace, REST: cfg.REST,
				ShimBinary: cfg.ShimBinary, Protocol: cfg.Protocol, Pod: p.Name}
			b, err := New(ctx, mc)
			if err != nil {
				errs[i] = fmt.Errorf("k8s: start the helper daemon in member %s: %w", p.Name, err)
				return
			}
			b.Close()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	note("the idle members' helper daemons are running")
	return nil
}

func newHelperKey() string {
	var k [32]byte
	rand.Read(k[:])
	return hex.EncodeToString(k[:])
}

// SandboxPod returns the pod of the agent-sandbox Sandbox name.
func SandboxPod(ctx context.Context, c *Client, name string) (string, error) {
	var sb asv1.Sandbox
	if err := c.asGet(ctx, "sandboxes", name, &sb); err != nil {
		if noObject(err) {
			return "", ops.ConfigError("k8s: no agent-sandbox Sandbox %q in namespace %s", name, c.Namespace)
		}
		return "", asErr("get sandbox", "sandboxes", err)
	}
	if n := sb.Annotations[asv1.SandboxPodNameAnnotation]; n != "" {
		return n, nil
	}
	return sb.Name, nil
}

// PoolInfo is one pool, as PoolList reports it.
type PoolInfo struct {
	Name          string
	Size, Ready   int
	Idle, Claimed int
	Image         string
}

// PoolList returns our pools (warm pools with LabelManaged), with their
// idle and claimed members; name, when set, selects one.
func PoolList(ctx context.Context, c *Client, name string) ([]PoolInfo, error) {
	sel := LabelManaged + "=true"
	if name != "" {
		sel += "," + LabelPool + "=" + name
	}
	var wps extv1.SandboxWarmPoolList
	if err := c.asList(ctx, "sandboxwarmpools", sel, &wps); err != nil {
		return nil, asErr("list sandbox warm pools", "sandboxwarmpools", err)
	}
	pods, err := c.api.listPods(ctx, metav1.ListOptions{LabelSelector: sel + "," + LabelPool})
	if err != nil {
		return nil, apiErr("list pods", err)
	}
	var out []PoolInfo
	for _, wp := range wps.Items {
		pi := PoolInfo{Name: wp.Name, Ready: int(wp.Status.ReadyReplicas)}
		if wp.Spec.Replicas != nil {
			pi.Size = int(*wp.Spec.Replicas)
		}
		for _, p := range pods.Items {
			if p.Labels[LabelPool] != wp.Name || p.DeletionTimestamp != nil {
				continue
			}
			if p.Labels[LabelClaim] != "" || p.Labels[extv1.SandboxIDLabel] != "" {
				pi.Claimed++
			} else {
				pi.Idle++
			}
			if pi.Image == "" && len(p.Spec.Containers) > 0 {
				pi.Image = p.Spec.Containers[0].Image
			}
		}
		out = append(out, pi)
	}
	return out, nil
}

// PoolDrain deletes pool's warm pool and template, with the idle members,
// and returns those members' pod names; claimed members stay.
func PoolDrain(ctx context.Context, c *Client, pool string) ([]string, error) {
	if err := CheckPoolName(pool); err != nil {
		return nil, err
	}
	idle, err := idleMembers(ctx, c, pool)
	if err != nil {
		return nil, err
	}
	for _, r := range []string{"sandboxwarmpools", "sandboxtemplates"} {
		if err := c.asDelete(ctx, r, pool); err != nil && !noObject(err) {
			return nil, asErr("delete "+r, r, err)
		}
	}
	var names []string
	for _, p := range idle {
		names = append(names, p.Name)
	}
	return names, nil
}

// downClaim deletes the claim that owns a claimed pod and waits until the
// pod is gone.
func downClaim(ctx context.Context, c *Client, pod, claim string) error {
	if err := c.asDelete(ctx, "sandboxclaims", claim); err != nil && !noObject(err) {
		return asErr("delete sandbox claim", "sandboxclaims", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		if _, err := c.api.getPod(ctx, pod); apierrors.IsNotFound(err) {
			return nil
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("k8s: pod %s still there after its claim %s was deleted: %w", pod, claim, err)
		}
	}
}

// claimPoll is how often a claim is looked at: often while a warm member
// is the likely answer (the controller binds one in about 0.1 s), then
// less (a cold sandbox takes seconds).
func claimPoll(start time.Time) time.Duration {
	if time.Since(start) < 2*time.Second {
		return 15 * time.Millisecond
	}
	return 200 * time.Millisecond
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// AgentSandbox checks what pools need on the cluster: agent-sandbox's four
// CRDs, and a controller that answers (an agent-sandbox-controller
// Deployment with a ready replica, or a warm pool whose status the
// controller wrote). It returns a sentence for doctor.
func AgentSandbox(ctx context.Context, c *Client) (string, error) {
	// Discovery (open to every authenticated user) says which resources
	// the server serves.
	served := map[string]bool{}
	for _, gv := range []string{asv1.GroupVersion.String(), extv1.GroupVersion.String()} {
		var list metav1.APIResourceList
		raw, err := c.api.core.Get().AbsPath("/apis/" + gv).Do(ctx).Raw()
		if err != nil && !apierrors.IsNotFound(err) {
			return "", apiErr("discovery of "+gv, err)
		}
		if err == nil && json.Unmarshal(raw, &list) == nil {
			for _, r := range list.APIResources {
				served[r.Name] = true
			}
		}
	}
	var missing []string
	for _, r := range []string{"sandboxes", "sandboxtemplates", "sandboxwarmpools", "sandboxclaims"} {
		if !served[r] {
			missing = append(missing, asResources[r])
		}
	}
	if len(missing) > 0 {
		return "", ops.ConfigError("k8s: agent-sandbox's CRDs missing: %v (install agent-sandbox v1.0.1: its k8s/crds, and its controller with --extensions; make cluster does both)", missing)
	}
	lacking, err := missingOf(ctx, c, PoolsNeeded)
	if err != nil {
		return "", err
	}
	if len(lacking) > 0 {
		var s []string
		for _, p := range lacking {
			s = append(s, p.String())
		}
		return "", fmt.Errorf("k8s: pools need in namespace %s: %s (the pi-sandbox-pools Role of deploy/k8s/rbac.yaml)", c.Namespace, strings.Join(s, ", "))
	}
	var dep struct {
		Status struct {
			ReadyReplicas int `json:"readyReplicas"`
		} `json:"status"`
	}
	raw, err := c.api.core.Get().AbsPath("/apis/apps/v1/namespaces/agent-sandbox-system/deployments/agent-sandbox-controller").Do(ctx).Raw()
	if err == nil && json.Unmarshal(raw, &dep) == nil && dep.Status.ReadyReplicas > 0 {
		return "CRDs installed; controller: deployment agent-sandbox-system/agent-sandbox-controller ready", nil
	}
	var wps extv1.SandboxWarmPoolList
	if err := c.asList(ctx, "sandboxwarmpools", "", &wps); err != nil {
		return "", asErr("list sandbox warm pools", "sandboxwarmpools", err)
	}
	for _, wp := range wps.Items {
		if wp.Status.ObservedGeneration > 0 {
			return fmt.Sprintf("CRDs installed; controller: answering (warm pool %s has its status)", wp.Name), nil
		}
		if time.Since(wp.CreationTimestamp.Time) > controllerHey {
			return "", fmt.Errorf("k8s: agent-sandbox's controller does not answer: warm pool %s has no status %s after its creation (run agent-sandbox-controller with --extensions; make cluster runs one)", wp.Name, time.Since(wp.CreationTimestamp.Time).Round(time.Second))
		}
	}
	return "CRDs installed; controller: not seen yet (no warm pool with a status; a controller on a host shows once a pool exists)", nil
}
