package k8s

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// sleepForever is the container's command: it only has to stay up.
var sleepForever = []string{"sleep", "2147483647"}

// userns caches, per API server, whether pods with hostUsers: false start
// (unknown until the first try).
var userns sync.Map // host → bool

// ErrNoUserNamespaces is the cause of a pod whose sandbox could not start
// with hostUsers: false.
var ErrNoUserNamespaces = errors.New("k8s: the node does not support user namespaces (hostUsers: false)")

// HardenedPod returns the pod of the hardened profile for cfg.Image, as New
// (kind KindEphemeral) and Up (kind KindSandbox) create it, named name;
// cfg's zero values become the defaults. hostUsers: false is set unless
// cfg.NoUserNamespace.
func HardenedPod(cfg Config, kind, name string) (*corev1.Pod, error) {
	if cfg.Image == "" {
		return nil, ErrNoTarget
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.fillImageDefaults()
	return hardenedPod(&cfg, kind, name, !cfg.NoUserNamespace), nil
}

func hardenedPod(cfg *Config, kind, name string, hostUsersFalse bool) *corev1.Pod {
	uid, gid, _ := parseUser(cfg.User)
	f, t := false, true
	labels := map[string]string{LabelManaged: "true", LabelKind: kind}
	if kind == KindEphemeral {
		host, _ := os.Hostname()
		labels[LabelHost] = labelValue(host)
		labels[LabelPID] = strconv.Itoa(os.Getpid())
	}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	var annotations map[string]string
	if kind == KindSandbox {
		// The up pod's helper key: readable through the API, not from
		// inside the pod (no service account token, no downward API).
		annotations = map[string]string{AnnotationHelperKey: newHelperKey()}
	}
	limits := corev1.ResourceList{}
	if cfg.CPUs > 0 {
		limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(cfg.CPUs*1000), resource.DecimalSI)
	}
	if cfg.Memory > 0 {
		limits[corev1.ResourceMemory] = *resource.NewQuantity(cfg.Memory, resource.BinarySI)
	}
	if cfg.EphemeralStorage > 0 {
		limits[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(cfg.EphemeralStorage, resource.BinarySI)
	}
	// Requests stay small so a sandbox schedules on a busy node; the
	// limits bound it.
	requests := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("50m"),
		corev1.ResourceMemory: resource.MustParse("64Mi"),
	}
	for k, v := range requests {
		if l, ok := limits[k]; ok && l.Cmp(v) < 0 {
			requests[k] = l
		}
	}
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: &f,
		ReadOnlyRootFilesystem:   &t,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	if cfg.AllowPrivilegeEscalation {
		sc.AllowPrivilegeEscalation = nil
	}
	if cfg.WritableRootfs {
		sc.ReadOnlyRootFilesystem = &f
	}
	for _, c := range cfg.CapAdd {
		sc.Capabilities.Add = append(sc.Capabilities.Add, corev1.Capability(strings.TrimPrefix(strings.ToUpper(c), "CAP_")))
	}
	psc := &corev1.PodSecurityContext{
		RunAsUser:  &uid,
		RunAsGroup: &gid,
		// No fsGroup: it makes the kubelet set the setgid bit on the
		// emptyDirs, and every new directory would inherit it (2755 where
		// docker, ssh and local make 755). emptyDirs are 0777 without it.
		RunAsNonRoot:   &t,
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if cfg.AllowRoot {
		psc.RunAsNonRoot = nil
	}
	if cfg.SeccompUnconfined {
		psc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	}
	tmpSize := resource.NewQuantity(cfg.TmpSize, resource.BinarySI)
	vols := []corev1.Volume{
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: tmpSize}}},
		{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "shim", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "tmp", MountPath: "/tmp"},
		{Name: "state", MountPath: StateDir},
		{Name: "shim", MountPath: ShimDir},
	}
	covered := false
	for i, m := range cfg.Mounts {
		n := "mount-" + strconv.Itoa(i)
		hp := corev1.HostPathUnset
		vols = append(vols, corev1.Volume{Name: n, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: m.Source, Type: &hp}}})
		mounts = append(mounts, corev1.VolumeMount{Name: n, MountPath: m.Target, ReadOnly: m.ReadOnly})
		if m.Target == cfg.WorkDir || strings.HasPrefix(cfg.WorkDir, strings.TrimSuffix(m.Target, "/")+"/") {
			covered = true
		}
	}
	if !covered {
		vols = append(vols, corev1.Volume{Name: "workspace", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "workspace", MountPath: cfg.WorkDir})
	}
	var env []corev1.EnvVar
	for _, kv := range append(append([]string{}, baseEnv...), cfg.Env...) {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	grace := int64(1)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &cfg.ServiceAccountToken,
			EnableServiceLinks:            &f,
			SecurityContext:               psc,
			Hostname:                      "pi-sandbox",
			Volumes:                       vols,
			Containers: []corev1.Container{{
				Name:            ContainerName,
				Image:           cfg.Image,
				ImagePullPolicy: corev1.PullPolicy(cfg.ImagePullPolicy),
				Command:         sleepForever,
				WorkingDir:      cfg.WorkDir,
				Env:             env,
				SecurityContext: sc,
				VolumeMounts:    mounts,
				Resources:       corev1.ResourceRequirements{Limits: limits, Requests: requests},
			}},
		},
	}
	if hostUsersFalse {
		p.Spec.HostUsers = &f
	}
	if cfg.RuntimeClassName != "" {
		p.Spec.RuntimeClassName = &cfg.RuntimeClassName
	}
	if cfg.MaxLifetime > 0 {
		s := int64(cfg.MaxLifetime / time.Second)
		p.Spec.ActiveDeadlineSeconds = &s
	}
	return p
}

var labelBad = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// labelValue makes s a valid label value (63 characters of [A-Za-z0-9._-],
// alphanumeric at both ends).
func labelValue(s string) string {
	s = labelBad.ReplaceAllString(s, "-")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "._-")
}

// newPodName names a pod we create.
func newPodName() string {
	var rnd [5]byte
	rand.Read(rnd[:])
	return "pi-sandbox-" + hex.EncodeToString(rnd[:])
}

// createPod creates and waits for a hardened pod from cfg.Image (defaults
// filled) and returns its name and whether it runs in a user namespace.
// hostUsers: false is tried where the cluster has not yet refused it; a
// pod whose sandbox cannot start with it is deleted and created again
// without.
func createPod(ctx context.Context, c *Client, cfg *Config, kind string) (string, bool, error) {
	try := !cfg.NoUserNamespace
	v, ok := userns.Load(c.REST.Host)
	if !ok && try {
		if known, all := nodesUserns(ctx, c); known {
			userns.Store(c.REST.Host, all)
			v, ok = all, true
		}
	}
	if ok {
		try = try && v.(bool)
	}
	name, err := createOne(ctx, c, cfg, kind, try)
	if try && errors.Is(err, ErrNoUserNamespaces) {
		userns.Store(c.REST.Host, false)
		try = false
		name, err = createOne(ctx, c, cfg, kind, false)
	} else if try && err == nil {
		userns.Store(c.REST.Host, true)
	}
	return name, try, err
}

func createOne(ctx context.Context, c *Client, cfg *Config, kind string, hostUsersFalse bool) (string, error) {
	p := hardenedPod(cfg, kind, newPodName(), hostUsersFalse)
	created, err := c.api.createPod(ctx, p)
	if err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			return "", ops.ConfigError("k8s: create pod in namespace %s: %w", c.Namespace, err)
		}
		return "", apiErr("create pod", err)
	}
	timeout := cfg.StartTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := waitRunning(wctx, c, created, hostUsersFalse); err != nil {
		deletePod(c, p.Name, false)
		if ctx.Err() == nil && wctx.Err() != nil && !errors.Is(err, ErrNoUserNamespaces) {
			return "", fmt.Errorf("k8s: pod %s did not start within %s: %w", p.Name, timeout, err)
		}
		return "", err
	}
	return p.Name, nil
}

// nodesUserns reads whether every node's default runtime handler supports
// user namespaces (status.runtimeHandlers); known is false when the nodes
// cannot be read (the minimal Role has no access to them) or do not say.
func nodesUserns(ctx context.Context, c *Client) (known, all bool) {
	nodes, err := c.api.listNodes(ctx)
	if err != nil || len(nodes.Items) == 0 {
		return false, false
	}
	for _, n := range nodes.Items {
		found := false
		for _, h := range n.Status.RuntimeHandlers {
			if h.Name == "" && h.Features != nil && h.Features.UserNamespaces != nil {
				found = true
				if !*h.Features.UserNamespaces {
					return true, false
				}
			}
		}
		if !found {
			return false, false
		}
	}
	return true, true
}

// sandboxWait is how long a scheduled pod with hostUsers: false may wait
// for its sandbox before the runtime is taken to refuse user namespaces
// (when the events that say so cannot be read).
const sandboxWait = 4 * time.Second

// waitRunning watches p until it runs, fails, or ctx ends.
func waitRunning(ctx context.Context, c *Client, p *corev1.Pod, usernsTry bool) error {
	var scheduledAt time.Time
	rv := p.ResourceVersion
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		w, err := c.api.watchPods(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", p.Name).String(), ResourceVersion: rv})
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return apiErr("watch pod", err)
		}
		done, err := func() (bool, error) {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return true, fmt.Errorf("%s: %w", podState(p), context.Cause(ctx))
				case <-tick.C:
					if usernsTry && !scheduledAt.IsZero() && time.Since(scheduledAt) > sandboxWait && !sandboxReady(p) {
						if refused, known := usernsRefused(ctx, c, p.Name); refused || !known {
							return true, fmt.Errorf("pod %s: %w", p.Name, ErrNoUserNamespaces)
						}
					}
				case ev, ok := <-w.ResultChan():
					if !ok {
						return false, nil // the watch expired: start another
					}
					switch ev.Type {
					case watch.Deleted:
						return true, fmt.Errorf("k8s: pod %s was deleted while starting", p.Name)
					case watch.Error:
						return false, nil
					}
					np, ok := ev.Object.(*corev1.Pod)
					if !ok {
						continue
					}
					p, rv = np, np.ResourceVersion
					if scheduledAt.IsZero() && p.Spec.NodeName != "" {
						scheduledAt = time.Now()
					}
					if err := startFailure(p); err != nil {
						return true, err
					}
					if p.Status.Phase == corev1.PodRunning && containersReady(p) {
						return true, nil
					}
				}
			}
		}()
		if done {
			return err
		}
	}
}

// sandboxReady reports the PodReadyToStartContainers condition.
func sandboxReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReadyToStartContainers {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// usernsRefused looks for the kubelet's event saying the runtime refuses
// user namespaces; known is false when the events cannot be read.
func usernsRefused(ctx context.Context, c *Client, pod string) (refused, known bool) {
	ev, err := c.api.listEvents(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", pod).String()})
	if err != nil {
		return false, false
	}
	for _, e := range ev.Items {
		if strings.Contains(e.Message, "user namespaces") {
			return true, true
		}
	}
	return false, true
}

// containersReady: every container has started.
func containersReady(p *corev1.Pod) bool {
	if len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// startFailure reports a pod that will not start.
func startFailure(p *corev1.Pod) error {
	switch p.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		return fmt.Errorf("k8s: pod %s ended while starting: %s", p.Name, podState(p))
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName":
				return ops.ConfigError("k8s: pod %s: container %s: %s: %s (the node cannot get image %s: push it to a registry the node pulls from, or load it into the node)", p.Name, cs.Name, w.Reason, w.Message, cs.Image)
			case "CreateContainerConfigError":
				return ops.ConfigError("k8s: pod %s: container %s: %s: %s", p.Name, cs.Name, w.Reason, w.Message)
			case "CreateContainerError", "RunContainerError", "CrashLoopBackOff":
				return fmt.Errorf("k8s: pod %s: container %s: %s: %s", p.Name, cs.Name, w.Reason, w.Message)
			}
		}
		if t := cs.State.Terminated; t != nil {
			return fmt.Errorf("k8s: pod %s: container %s exited (%s, code %d): %s", p.Name, cs.Name, t.Reason, t.ExitCode, t.Message)
		}
	}
	return nil
}

// podState describes p's status in a few words.
func podState(p *corev1.Pod) string {
	s := string(p.Status.Phase)
	if p.Status.Reason != "" {
		s += " (" + p.Status.Reason + ": " + p.Status.Message + ")"
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			s += ", " + cs.Name + " " + w.Reason
		}
	}
	return s
}

// deletePod deletes name now (grace period 0: the sandbox has no state to
// save); with wait, it returns once the pod is gone. "Already gone" is
// success.
func deletePod(c *Client, name string, wait bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return deletePodCtx(ctx, c, name, wait)
}

func deletePodCtx(ctx context.Context, c *Client, name string, wait bool) error {
	zero := int64(0)
	bg := metav1.DeletePropagationBackground
	err := c.api.deletePod(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero, PropagationPolicy: &bg})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return apiErr("delete pod "+name, err)
	}
	if !wait {
		return nil
	}
	for {
		w, err := c.api.watchPods(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			return apiErr("watch pod "+name, err)
		}
		// The watch starts after a get: a pod deleted in between is gone.
		if _, err := c.api.getPod(ctx, name); apierrors.IsNotFound(err) {
			w.Stop()
			return nil
		}
		gone := false
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				gone = true
				break
			}
		}
		w.Stop()
		if gone {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("k8s: pod %s still there: %w", name, context.Cause(ctx))
		}
	}
}
