package k8s

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestHardenedPod(t *testing.T) {
	p, err := HardenedPod(Config{Image: "img", Labels: map[string]string{"x": "y"}, Mounts: []Mount{{Source: "/h", Target: "/workspace", ReadOnly: true}}}, KindEphemeral, "pi-sandbox-x")
	if err != nil {
		t.Fatal(err)
	}
	s := p.Spec
	c := s.Containers[0]
	sc, psc := c.SecurityContext, s.SecurityContext
	switch {
	case *psc.RunAsUser != 1000 || *psc.RunAsGroup != 1000 || !*psc.RunAsNonRoot || psc.FSGroup != nil:
		t.Errorf("pod security context %+v", psc)
	case psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("seccomp %v", psc.SeccompProfile)
	case *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL":
		t.Errorf("container security context %+v", sc)
	case *s.AutomountServiceAccountToken || *s.EnableServiceLinks || s.RestartPolicy != corev1.RestartPolicyNever || *s.TerminationGracePeriodSeconds != 1:
		t.Errorf("pod spec %+v", s)
	case s.HostUsers == nil || *s.HostUsers:
		t.Errorf("hostUsers %v, want false", s.HostUsers)
	case c.ImagePullPolicy != corev1.PullIfNotPresent || strings.Join(c.Command, " ") != "sleep 2147483647":
		t.Errorf("container %+v", c)
	case p.Labels[LabelManaged] != "true" || p.Labels[LabelKind] != KindEphemeral || p.Labels["x"] != "y" || p.Labels[LabelPID] == "":
		t.Errorf("labels %v", p.Labels)
	}
	if l := c.Resources.Limits; l.Cpu().String() != "2" || l.Memory().String() != "2Gi" || l.StorageEphemeral().String() != "8Gi" {
		t.Errorf("limits %v", l)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	for _, want := range []string{"/tmp", StateDir, ShimDir, "/workspace"} {
		if _, ok := mounts[want]; !ok {
			t.Errorf("no volume at %s (%v)", want, c.VolumeMounts)
		}
	}
	if !mounts["/workspace"].ReadOnly {
		t.Error("the read-only hostPath mount of /workspace is writable")
	}
	for _, v := range s.Volumes {
		if v.Name == "tmp" && (v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory) {
			t.Errorf("/tmp volume %+v, want a memory emptyDir", v)
		}
		if v.Name == "workspace" {
			t.Error("an emptyDir workspace despite the mount covering it")
		}
	}
	p, _ = HardenedPod(Config{Image: "img", NoUserNamespace: true, AllowRoot: true, User: "0:0", WritableRootfs: true}, KindSandbox, "n")
	if p.Spec.HostUsers != nil || p.Spec.SecurityContext.RunAsNonRoot != nil || *p.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("relaxations not applied: %+v", p.Spec)
	}
	if _, ok := p.Labels[LabelPID]; ok {
		t.Error("a sandbox pod records its creator's pid")
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "needs Image or Pod"},
		{Config{Image: "i", Pod: "p"}, "both"},
		{Config{Pod: "p", User: "1:1"}, "User"},
		{Config{Pod: "p", Mounts: []Mount{{"/a", "/b", false}}}, "Mounts"},
		{Config{Image: "i", Container: "c"}, "Container needs Pod"},
		{Config{Image: "i", User: "0:0"}, "AllowRoot"},
		{Config{Image: "i", User: "me"}, "numeric"},
		{Config{Image: "i", ImagePullPolicy: "Sometimes"}, "ImagePullPolicy"},
		{Config{Image: "i", Lease: 2}, "Lease"},
		{Config{Image: "i", WorkDir: "rel"}, "WorkDir"},
		{Config{Image: "i"}, ""},
		{Config{Pod: "p", Container: "c", NoHelper: true}, ""},
	} {
		err := tt.cfg.validate()
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: %v, want %q", tt.cfg, err, tt.want)
		}
	}
	if _, err := ParseMount("/a:/b:ro"); err != nil {
		t.Error(err)
	}
	if _, err := ParseMount("a:/b"); err == nil {
		t.Error("a relative mount source parsed")
	}
	if v := labelValue("My_Host.example.com:" + strings.Repeat("x", 80)); len(v) > 63 || strings.ContainsAny(v, ":") {
		t.Errorf("label value %q", v)
	}
}
