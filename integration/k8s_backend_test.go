package integration

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
)

// TestK8sSmoke: an ephemeral hardened pod runs a command through the helper.
func TestK8sSmoke(t *testing.T) {
	b := newK8s(t, k8s.Config{Image: k8sBusybox}, "smoke")
	var out bytes.Buffer
	if err := b.Run(t.Context(), &ops.Cmd{Command: "id -u; pwd; echo hi >&2", Output: &out}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "1000\n/workspace\nhi\n" {
		t.Errorf("output %q", out.String())
	}
	t.Logf("info %+v", b.Info())
}

// TestK8sSpillKeyed: backends on the same pod and working directory (later
// CLI calls) share the spill directory, so a full-output file stays
// readable; another working directory gets another one.
func TestK8sSpillKeyed(t *testing.T) {
	pod := upPod(t, k8sBusybox, "spill")
	a := newK8s(t, k8s.Config{Pod: pod}, "spill")
	w, err := a.OpenWriter(t.Context(), a.Info().SpillDir+"/pi-bash-0123456789abcdef.log", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("full output\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := newK8s(t, k8s.Config{Pod: pod}, "spill")
	if b.Info().SpillDir != a.Info().SpillDir {
		t.Fatalf("spill directories %s and %s differ", a.Info().SpillDir, b.Info().SpillDir)
	}
	data, err := ops.ReadFile(t.Context(), b, b.Info().SpillDir+"/pi-bash-0123456789abcdef.log")
	if err != nil || string(data) != "full output\n" {
		t.Errorf("a later backend reads %q, %v", data, err)
	}
	c := newK8s(t, k8s.Config{Pod: pod, WorkDir: "/tmp"}, "spill")
	if c.Info().SpillDir == a.Info().SpillDir {
		t.Errorf("another working directory shares the spill directory %s", a.Info().SpillDir)
	}
}

// TestK8sProtocols: the helper and the upload work over WebSocket (v5)
// only and over SPDY (v4) only, exit codes included.
func TestK8sProtocols(t *testing.T) {
	pod := upPod(t, k8sBusybox, "protocols")
	for _, p := range []string{"websocket", "spdy"} {
		for _, noHelper := range []bool{false, true} {
			b := newK8s(t, k8s.Config{Pod: pod, Protocol: p, NoHelper: noHelper}, "protocols")
			var out bytes.Buffer
			err := b.Run(t.Context(), &ops.Cmd{Command: "echo via; exit 3", Output: &out})
			var ee *ops.ExitError
			if !errors.As(err, &ee) || ee.Code != 3 || out.String() != "via\n" {
				t.Errorf("%s (nohelper %v): Run = %v, output %q; want exit 3 and via", p, noHelper, err, out.String())
			}
		}
	}
}

// TestK8sUpServiceLivesUntilDown is issue 12 on an up pod: a background
// process started through one backend (one CLI call) is alive for the
// next, which lists it; the next call reaches the same helper daemon; a
// plain pod keeps the session rule; Down leaves nothing.
func TestK8sUpServiceLivesUntilDown(t *testing.T) {
	c := needCluster(t)
	ctx := t.Context()
	name, err := k8s.Up(ctx, k8sCfg(k8s.Config{Image: k8sBusybox}, "up-service"))
	if err != nil {
		t.Fatal(err)
	}
	downed := false
	t.Cleanup(func() {
		if !downed {
			k8s.Down(context.Background(), c, name)
		}
	})
	run := func(b ops.Backend, cmd string) {
		t.Helper()
		if err := b.Run(ctx, &ops.Cmd{Command: cmd}); err != nil {
			t.Fatalf("Run(%q): %v", cmd, err)
		}
	}
	a, err := k8s.New(ctx, k8sCfg(k8s.Config{Pod: name}, "up-service"))
	if err != nil {
		t.Fatal(err)
	}
	run(a, "sleep 3021 >/dev/null 2>&1 &")
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	b := newK8s(t, k8s.Config{Pod: name}, "up-service")
	procs, err := b.Processes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range procs {
		found = found || strings.Contains(p.Command, "sleep 3021")
	}
	if !found {
		t.Errorf("the next backend's Processes = %+v, want the sleep 3021 started by the last", procs)
	}
	// The command itself, not the shim that owns it: a shim started cold
	// (no warm one ready yet) has the command in its own command line.
	if n := podCount(t, name, "^sleep 3021"); n != 1 {
		t.Errorf("%d sleep 3021 processes in the up pod after its client closed, want 1", n)
	}

	// A plain pod: the background process ends with its backend.
	plain := plainPod(t, k8sBusybox, "up-service-plain")
	p, err := k8s.New(ctx, k8sCfg(k8s.Config{Pod: plain}, "up-service"))
	if err != nil {
		t.Fatal(err)
	}
	run(p, "sleep 3022 >/dev/null 2>&1 &")
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitNoneInPod(t, plain, "[s]leep 3022", 3*time.Second)

	if err := k8s.Down(ctx, c, name); err != nil {
		t.Fatal(err)
	}
	downed = true
	if _, err := clientset(t, c).CoreV1().Pods(c.Namespace).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod %s after Down: %v, want not found", name, err)
	}
}
