package k8s

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// TestPodMountOwner: a pod with a hostPath this host can stat and no user
// runs as its owner; a root-owned one keeps 1000:1000 with a note.
func TestPodMountOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root to give a directory to another uid")
	}
	owned, root := t.TempDir(), t.TempDir()
	if err := os.Chown(owned, 1001, 1002); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for src, want := range map[string]int64{owned: 1001, root: 1000} {
		p, err := HardenedPod(Config{Image: "img", Mounts: []Mount{{Source: src, Target: "/workspace"}}, Note: func(s string) { notes = append(notes, s) }}, KindEphemeral, "pi-sandbox-x")
		if err != nil {
			t.Fatal(err)
		}
		if u := *p.Spec.SecurityContext.RunAsUser; u != want {
			t.Errorf("%s: runAsUser %d, want %d", src, u, want)
		}
	}
	if len(notes) != 1 {
		t.Errorf("notes %q, want the root-owned mount's", notes)
	}
}

func TestPodConfigRefusals(t *testing.T) {
	if err := CheckUser("abc"); !errors.Is(err, ops.ErrConfig) {
		t.Errorf("CheckUser(abc) = %v", err)
	}
	p := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "sandbox", Image: "img:1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: "not present"}}}}}}
	if err := startFailure(p); !errors.Is(err, ops.ErrConfig) {
		t.Errorf("image not on the node: %v", err)
	}
}

// TestProbeHome: in a pod of our own, a HOME the user cannot write (a uid
// the image does not list has /) is replaced by the user's directory in
// the state directory; a writable one stays.
func TestProbeHome(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		testenv.SkipOrFail(t, "no sh")
	}
	state := t.TempDir()
	name := "pi-sandbox-probe-test-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() {
		for _, base := range []string{StateDir, "/var/tmp", "/tmp"} {
			os.RemoveAll(filepath.Join(base, name))
		}
	})
	probe := func(home string) string {
		cmd := exec.Command("sh", "-c", probeScript, "sh", state, name, "", "", state)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		return string(out)
	}
	want := "sethome=" + state + "/home-" + strconv.Itoa(os.Getuid()) + "\n"
	if out := probe("/"); !strings.Contains(out, want) {
		t.Errorf("HOME=/: %q lacks %q", out, want)
	}
	if fi, err := os.Stat(strings.TrimSpace(strings.TrimPrefix(want, "sethome="))); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the home: %v, %v", fi, err)
	}
	if out := probe(t.TempDir()); strings.Contains(out, "sethome=") {
		t.Errorf("a writable HOME was replaced: %q", out)
	}
}
