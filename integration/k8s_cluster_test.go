package integration

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestK8sClusterSmoke checks the development cluster of make cluster (make cluster-test):
// a pod from the project's busybox image, imported into the cluster's containerd and not
// pullable from anywhere, gets Running; pods/exec carries stdout, stderr and the exit code.
// It drives the kubectl built with the cluster (hack/cluster/tools/k8s), independent of
// the backend's client-go.
func TestK8sClusterSmoke(t *testing.T) {
	needCluster(t)
	kubeconfig := k8sConfig
	kubectl := os.Getenv("PI_SANDBOX_KUBECTL")
	if kubectl == "" {
		kubectl = filepath.Join(filepath.Dir(kubeconfig), "bin", "kubectl")
	}
	if _, err := os.Stat(kubectl); err != nil {
		skipOrFail(t, "no kubectl (set PI_SANDBOX_KUBECTL): "+err.Error())
	}
	k := func(stdin string, args ...string) (string, string, error) {
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig, "--request-timeout=60s"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}

	name := "pi-sandbox-smoke-" + runID
	pod := `{"apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "` + name + `", "labels": {"` + runLabel + `": "` + runID + `"}},
  "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
    "automountServiceAccountToken": false, "enableServiceLinks": false, "dnsPolicy": "Default",
    "containers": [{"name": "sandbox", "image": "docker.io/pi-sandbox/busybox:latest",
      "imagePullPolicy": "IfNotPresent", "command": ["sleep", "3600"]}]}}`
	if _, stderr, err := k(pod, "create", "-f", "-"); err != nil {
		t.Fatalf("kubectl create: %v: %s", err, stderr)
	}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			k("", "delete", "pod", name, "--grace-period=1", "--wait=true", "--timeout=60s")
		}
	})

	if _, stderr, err := k("", "wait", "--for=jsonpath={.status.phase}=Running", "pod/"+name, "--timeout=120s"); err != nil {
		desc, _, _ := k("", "describe", "pod", name)
		t.Fatalf("pod not Running: %v: %s\n%s", err, stderr, desc)
	}

	stdout, stderr, err := k("", "exec", name, "--", "echo", "hi")
	if err != nil || stdout != "hi\n" {
		t.Errorf("exec echo hi: stdout %q, stderr %q, err %v; want stdout \"hi\\n\"", stdout, stderr, err)
	}
	// Debian's containerd 1.6 never delivered exec stderr; this one must.
	stdout, stderr, err = k("", "exec", name, "--", "sh", "-c", "echo out; echo err >&2")
	if err != nil || stdout != "out\n" || stderr != "err\n" {
		t.Errorf("exec with stderr: stdout %q, stderr %q, err %v; want \"out\\n\" and \"err\\n\"", stdout, stderr, err)
	}
	_, stderr, err = k("", "exec", name, "--", "sh", "-c", "exit 3")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("exec sh -c 'exit 3': err %v (stderr %q); want exit code 3", err, stderr)
	}

	start := time.Now()
	if _, stderr, err := k("", "delete", "pod", name, "--grace-period=1", "--wait=true", "--timeout=60s"); err != nil {
		t.Fatalf("kubectl delete: %v: %s", err, stderr)
	}
	deleted = true
	_, stderr, err = k("", "get", "pod", name)
	if err == nil || !strings.Contains(stderr, "NotFound") {
		t.Errorf("pod still there %s after delete: err %v, stderr %q", time.Since(start).Round(time.Millisecond), err, stderr)
	}
}
