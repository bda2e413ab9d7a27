package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The agent-sandbox controller (sigs.k8s.io/agent-sandbox, built through tools/agent-sandbox)
// runs on the host like the other components, with its extensions on (SandboxClaim,
// SandboxTemplate, SandboxWarmPool beside Sandbox). It talks to the API server with the
// admin kubeconfig, so it needs none of the RBAC of its in-cluster Deployment. Its CRDs
// come from the pinned module's k8s/crds.
const agentSandboxName = "agent-sandbox-controller"

// agentSandboxKinds are the kinds it starts a controller for with --extensions; it is
// ready once it has started workers for each.
var agentSandboxKinds = []string{"Sandbox", "SandboxClaim", "SandboxTemplate", "SandboxWarmPool"}

// ensureAgentSandbox builds the controller into the cache unless it is there, and finds
// the pinned module's CRD manifests (go mod download names its directory in the module
// cache, fetching it if it is not there).
func ensureAgentSandbox(cfg config, b *bins) error {
	dir := filepath.Join(cfg.cacheDir, "agent-sandbox-"+agentSandboxVersion)
	module := filepath.Join(cfg.repo, "hack/cluster/tools/agent-sandbox")
	if err := goBuild(cfg, dir, module, nil,
		"-s -w -X sigs.k8s.io/agent-sandbox/internal/version.gitVersion="+agentSandboxVersion,
		"sigs.k8s.io/agent-sandbox/cmd/", agentSandboxName); err != nil {
		return err
	}
	b.agentSandbox = filepath.Join(dir, agentSandboxName)
	out, err := output(module, "go", "mod", "download", "-json", "sigs.k8s.io/agent-sandbox@"+agentSandboxVersion)
	if err != nil {
		return err
	}
	var m struct{ Dir string }
	if err := json.Unmarshal([]byte(out), &m); err != nil || m.Dir == "" {
		return fmt.Errorf("cluster: go mod download sigs.k8s.io/agent-sandbox@%s named no directory: %s", agentSandboxVersion, out)
	}
	b.agentSandboxCRDs = filepath.Join(m.Dir, "k8s", "crds")
	return nil
}

// startAgentSandbox applies the CRDs, waits until the API server serves them, then
// (re)starts the controller and waits until it has started its controllers. On failure
// the controller is stopped; its log stays.
func startAgentSandbox(l layout, b bins, api *apiClient) error {
	apiPID := recorded(l, "kube-apiserver")
	files, _ := filepath.Glob(filepath.Join(b.agentSandboxCRDs, "*.yaml"))
	if len(files) == 0 {
		return fmt.Errorf("cluster: no CRD manifests in %s", b.agentSandboxCRDs)
	}
	var names []string
	for _, f := range files {
		manifest, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		name := crdName(manifest)
		if name == "" {
			return fmt.Errorf("cluster: %s names no CustomResourceDefinition", f)
		}
		if err := waitFor(l, "kube-apiserver", apiPID, time.Minute, func() error {
			return api.applyCRD(name, manifest)
		}); err != nil {
			return err
		}
		names = append(names, name)
	}
	for _, name := range names {
		if err := waitFor(l, "kube-apiserver", apiPID, time.Minute, func() error {
			return api.crdEstablished(name)
		}); err != nil {
			return err
		}
	}

	stopComponent(l, agentSandboxName, 10*time.Second) // one that runs but is not ready
	logFile := l.logFile(agentSandboxName)
	var from int64
	if fi, err := os.Stat(logFile); err == nil {
		from = fi.Size() // the log is appended to: only this run's lines count
	}
	pid, err := start(l, agentSandboxName, b.agentSandbox, nil, agentSandboxArgs(l)...)
	if err != nil {
		return err
	}
	err = waitFor(l, agentSandboxName, pid, 2*time.Minute, func() error {
		if err := agentSandboxProbe(); err != nil {
			return err
		}
		return workersStarted(logFile, from)
	})
	if err != nil {
		stopComponent(l, agentSandboxName, 10*time.Second)
	}
	return err
}

// agentSandboxArgs: no leader election (one replica), no metrics listener, the health
// probe on loopback.
func agentSandboxArgs(l layout) []string {
	return []string{
		"--kubeconfig=" + l.kubeconfig(), "--extensions", "--leader-elect=false",
		"--metrics-bind-address=0", fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", agentSandboxProbePort),
	}
}

// agentSandboxRunning reports whether the recorded controller is alive and its readiness
// probe answers.
func agentSandboxRunning(l layout) bool {
	return recorded(l, agentSandboxName) != 0 && agentSandboxProbe() == nil
}

// agentSandboxProbe asks the controller's /readyz (it answers once the manager runs, before
// its caches have synced).
func agentSandboxProbe() error {
	c := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", agentSandboxProbePort))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("agent-sandbox-controller /readyz: %s", resp.Status)
	}
	return nil
}

// workersStarted reports nil once the log, from offset from on, has controller-runtime's
// "Starting workers" line for every kind of agentSandboxKinds (logged after the
// controller's caches have synced).
func workersStarted(logFile string, from int64) error {
	f, err := os.Open(logFile)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return err
	}
	log, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	started := map[string]bool{}
	for _, line := range bytes.Split(log, []byte("\n")) {
		var rec struct{ Msg, ControllerKind string }
		if json.Unmarshal(line, &rec) == nil && rec.Msg == "Starting workers" {
			started[rec.ControllerKind] = true
		}
	}
	var missing []string
	for _, k := range agentSandboxKinds {
		if !started[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("no workers started yet for %s", strings.Join(missing, ", "))
	}
	return nil
}

// crdName returns metadata.name of a CustomResourceDefinition manifest as controller-gen
// writes it (name indented two spaces under a top-level metadata:), or "". A wrong name
// cannot go unnoticed: the API server refuses a body whose name differs from the URL's.
func crdName(manifest []byte) string {
	m := regexp.MustCompile(`(?m)^metadata:\n(?:  .*\n)*?  name: (\S+)\n`).FindSubmatch(manifest)
	if m == nil {
		return ""
	}
	return string(m[1])
}
