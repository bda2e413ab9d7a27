package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// bins are the paths of everything the cluster runs.
type bins struct {
	k8sDir, containerdDir, cniDir, etcd, pause string
	agentSandbox                               string // the agent-sandbox controller
	agentSandboxCRDs                           string // the directory of its CRD manifests
}

func (b bins) k8s(name string) string        { return filepath.Join(b.k8sDir, name) }
func (b bins) containerd(name string) string { return filepath.Join(b.containerdDir, name) }

// ensureBins builds or unpacks what is missing from the cache and returns the paths.
func ensureBins(cfg config) (bins, error) {
	b := bins{
		k8sDir:        filepath.Join(cfg.cacheDir, "kubernetes-"+kubeVersion),
		containerdDir: filepath.Join(cfg.cacheDir, "containerd-"+containerdVersion),
	}
	v := "k8s.io/component-base/version"
	ldflags := fmt.Sprintf("-s -w -X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean",
		v, kubeVersion, v, "1", v, strings.Split(kubeVersion, ".")[1], v)
	if err := goBuild(cfg, b.k8sDir, filepath.Join(cfg.repo, "hack/cluster/tools/k8s"), nil, ldflags,
		"k8s.io/kubernetes/cmd/", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl"); err != nil {
		return b, err
	}
	if err := goBuild(cfg, b.containerdDir, filepath.Join(cfg.repo, "hack/cluster/tools/containerd"),
		[]string{"-tags", "no_btrfs"}, "-s -w -X github.com/containerd/containerd/v2/version.Version="+containerdVersion,
		"github.com/containerd/containerd/v2/cmd/", "containerd", "containerd-shim-runc-v2", "ctr"); err != nil {
		return b, err
	}
	if err := ensureAgentSandbox(cfg, &b); err != nil {
		return b, err
	}
	deb, err := ensureDebs(cfg)
	if err != nil {
		return b, err
	}
	b.etcd = filepath.Join(deb, "usr/bin/etcd")
	b.cniDir = filepath.Join(deb, "usr/lib/cni")
	b.pause, err = ensurePause(cfg)
	return b, err
}

// goBuild builds the commands into dir unless all of them are there. It builds into a
// temporary directory renamed into place, so an interrupted build leaves no half cache.
func goBuild(cfg config, dir, module string, flags []string, ldflags, prefix string, cmds ...string) error {
	missing := false
	for _, c := range cmds {
		if _, err := os.Stat(filepath.Join(dir, c)); err != nil {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	tmp := dir + ".tmp"
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	args := []string{"-n", "15", "go", "build", "-p", strconv.Itoa(cfg.jobs), "-trimpath", "-ldflags", ldflags}
	args = append(args, flags...)
	args = append(args, "-o", tmp+"/")
	for _, c := range cmds {
		args = append(args, prefix+c)
	}
	logf("building %s (cached afterwards in %s; takes minutes the first time)", strings.Join(cmds, ", "), dir)
	start := time.Now()
	cmd := exec.Command("nice", args...)
	cmd.Dir = module
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOMAXPROCS="+strconv.Itoa(cfg.jobs), "GOFLAGS=-mod=readonly")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cluster: building %s in %s: %w", strings.Join(cmds, ", "), module, err)
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	logf("built %s in %s", strings.Join(cmds, ", "), time.Since(start).Round(time.Second))
	return nil
}

// ensureDebs unpacks Debian's etcd-server and containernetworking-plugins into the cache
// (apt-get download + dpkg -x: nothing is installed and no service starts).
func ensureDebs(cfg config) (string, error) {
	root := filepath.Join(cfg.cacheDir, "debian", "root")
	if fileExists(filepath.Join(root, "usr/bin/etcd")) && fileExists(filepath.Join(root, "usr/lib/cni/bridge")) {
		return root, nil
	}
	logf("fetching etcd-server and containernetworking-plugins from apt")
	dl, err := os.MkdirTemp("", "pi-sandbox-cluster-debs-")
	if err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	defer os.RemoveAll(dl)
	os.Chmod(dl, 0o755) // apt's _apt user writes the download
	if err := run(dl, "apt-get", "download", "etcd-server", "containernetworking-plugins"); err != nil {
		return "", err
	}
	debs, _ := filepath.Glob(filepath.Join(dl, "*.deb"))
	tmp := root + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil { // dpkg -x makes no parents
		return "", fmt.Errorf("cluster: %w", err)
	}
	for _, d := range debs {
		if err := run(dl, "dpkg", "-x", d, tmp); err != nil {
			return "", err
		}
	}
	os.RemoveAll(root)
	if err := os.Rename(tmp, root); err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	return root, nil
}

// ensurePause compiles Kubernetes' own pause.c statically.
func ensurePause(cfg config) (string, error) {
	out := filepath.Join(cfg.cacheDir, "pause-"+kubeVersion, "pause")
	if fileExists(out) {
		return out, nil
	}
	modDir, err := output(filepath.Join(cfg.repo, "hack/cluster/tools/k8s"), "go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes")
	if err != nil {
		return "", err
	}
	os.MkdirAll(filepath.Dir(out), 0o755)
	src := filepath.Join(strings.TrimSpace(modDir), "build/pause/linux/pause.c")
	if err := run("", "gcc", "-static", "-Os", "-DVERSION="+kubeVersion, "-o", out+".tmp", src); err != nil {
		return "", err
	}
	return out, os.Rename(out+".tmp", out)
}

// pauseArchive is a docker-save archive of registry.k8s.io/pause:TAG holding only /pause,
// for ctr import (no Docker engine involved).
func pauseArchive(pause string) ([]byte, error) {
	bin, err := os.ReadFile(pause)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	mtime := time.Unix(0, 0)
	lw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(bin)), ModTime: mtime, Typeflag: tar.TypeReg})
	lw.Write(bin)
	lw.Close()
	sum := sha256.Sum256(layer.Bytes())
	diffID := "sha256:" + hex.EncodeToString(sum[:])
	conf, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Entrypoint": []string{"/pause"}, "User": "65535:65535"},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID}},
	})
	csum := sha256.Sum256(conf)
	confName := hex.EncodeToString(csum[:]) + ".json"
	layerName := hex.EncodeToString(sum[:]) + "/layer.tar"
	manifest, _ := json.Marshal([]map[string]any{{
		"Config": confName, "RepoTags": []string{"registry.k8s.io/pause:" + pauseTag}, "Layers": []string{layerName},
	}})
	var out bytes.Buffer
	w := tar.NewWriter(&out)
	for _, f := range []struct {
		name string
		data []byte
	}{{confName, conf}, {layerName, layer.Bytes()}, {"manifest.json", manifest}} {
		if err := w.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		w.Write(f.data)
	}
	return out.Bytes(), w.Close()
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// run runs a short command with its output on stderr.
func run(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cluster: %s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

func output(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("cluster: %s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}
