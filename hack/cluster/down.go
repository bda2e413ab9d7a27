package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// down stops what up started and removes everything it created. It is safe to run on a
// half-started or already stopped cluster, and does nothing without a state directory.
func down(cfg config) error {
	l := layout{cfg.stateDir}
	if !fileExists(l.dir) {
		logf("no cluster state in %s; nothing to do", l.dir)
		return nil
	}
	t0 := time.Now()
	host := loadHost(l)
	// Controllers first, so nothing recreates the pods deleted next.
	stopComponent(l, agentSandboxName, 10*time.Second)
	stopComponent(l, "kube-controller-manager", 10*time.Second)
	stopComponent(l, "kube-scheduler", 10*time.Second)
	deletePods(l)
	stopComponent(l, "kubelet", 15*time.Second)
	removeContainers(l)
	stopComponent(l, "kube-apiserver", 15*time.Second) // before etcd, or its shutdown waits
	stopComponent(l, "etcd", 10*time.Second)
	stopComponent(l, "containerd", 15*time.Second)

	// What is left: shims and pod processes whose stop failed. They are ours: shims name
	// our containerd socket, pod processes sit in the kubelet's kubepods cgroups.
	for _, pid := range strays(l, cfg.cacheDir) {
		logf("killing leftover process %d", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range strays(l, cfg.cacheDir) {
		for alive(pid) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	unmountUnder(l.dir)
	removeBridge()
	removeCgroups(host)
	for _, p := range hostPaths {
		if !host.Existed[p] {
			os.RemoveAll(p)
		} else if p == "/var/log/containers" {
			removeLinksInto(p, l.podLogs())
		}
	}
	restoreSysctls(l)
	if err := os.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("cluster: removing %s: %w", l.dir, err)
	}
	if left := leftovers(l, cfg.cacheDir); left != "" {
		return fmt.Errorf("cluster: down left %s", left)
	}
	logf("cluster down in %s; removed %s", time.Since(t0).Round(10*time.Millisecond), l.dir)
	return nil
}

func stopComponent(l layout, name string, grace time.Duration) {
	if pid := recorded(l, name); pid != 0 {
		t0 := time.Now()
		stop(pid, grace)
		if d := time.Since(t0); d > 2*time.Second {
			logf("%s took %s to stop", name, d.Round(100*time.Millisecond))
		}
	}
	os.Remove(l.pidFile(name))
}

// deletePods deletes every pod through the API and waits until the kubelet has stopped
// them, so that CRI tears down their network namespaces, CNI state and mounts itself.
func deletePods(l layout) {
	if recorded(l, "kube-apiserver") == 0 || recorded(l, "kubelet") == 0 {
		return
	}
	api, err := newAPIClient(l)
	if err != nil {
		return
	}
	pods, err := api.pods()
	if err != nil || len(pods) == 0 {
		return
	}
	logf("deleting %d pod(s)", len(pods))
	for _, p := range pods {
		api.deletePod(p)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if left, err := api.pods(); err != nil || len(left) == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	logf("pods still terminating after 60s; killing their containers directly")
}

// removeContainers kills and removes whatever containers CRI still has (the kubelet keeps
// stopped sandboxes around; a failed pod deletion leaves running ones).
func removeContainers(l layout) {
	if recorded(l, "containerd") == 0 {
		return
	}
	ctr := func(args ...string) ([]byte, error) {
		full := append([]string{"--address", l.containerdSock(), "-n", "k8s.io"}, args...)
		return exec.Command(filepath.Join(l.binLink(), "ctr"), full...).Output()
	}
	tasks, _ := ctr("tasks", "ls", "-q")
	for _, id := range strings.Fields(string(tasks)) {
		ctr("tasks", "kill", "-s", "SIGKILL", id)
	}
	for _, id := range strings.Fields(string(tasks)) {
		for i := 0; i < 50; i++ {
			if _, err := ctr("tasks", "delete", id); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	containers, _ := ctr("containers", "ls", "-q")
	for _, id := range strings.Fields(string(containers)) {
		ctr("containers", "rm", id)
	}
}

// strays lists live processes that run one of the cached binaries and name the state
// directory on their command line (components whose PID file is gone, containerd shims),
// and the processes in the kubelet's kubepods cgroups (pods).
func strays(l layout, cache string) []int {
	var pids []int
	seen := map[int]bool{os.Getpid(): true}
	add := func(pid int) {
		if !seen[pid] && alive(pid) {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if strings.HasPrefix(exe, cache+"/") && bytes.Contains(cmdline, []byte(l.dir)) {
			add(pid)
		}
	}
	cgs, _ := filepath.Glob(kubepodsCgroups)
	for _, cg := range cgs {
		filepath.WalkDir(cg, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "cgroup.procs" {
				b, _ := os.ReadFile(p)
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						add(pid)
					}
				}
			}
			return nil
		})
	}
	return pids
}

// unmountUnder detaches every mount at or below dir, deepest first (the kubelet
// bind-mounts its root onto itself; CRI leaves netns, shm and rootfs mounts).
func unmountUnder(dir string) {
	for round := 0; round < 5; round++ {
		mps := mountsUnder(dir)
		if len(mps) == 0 {
			return
		}
		sort.Slice(mps, func(i, j int) bool { return len(mps[i]) > len(mps[j]) })
		for _, mp := range mps {
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil {
				logf("unmount %s: %v", mp, err)
			}
		}
	}
}

func mountsUnder(dir string) []string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeBridge deletes the pod bridge and any veth still attached to it.
func removeBridge() {
	if exec.Command("ip", "link", "show", bridgeName).Run() != nil {
		return
	}
	out, _ := exec.Command("ip", "-o", "link", "show", "master", bridgeName).Output()
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			exec.Command("ip", "link", "del", name).Run()
		}
	}
	if err := exec.Command("ip", "link", "del", bridgeName).Run(); err != nil {
		logf("ip link del %s: %v", bridgeName, err)
	}
}

// removeCgroups removes the kubelet's kubepods cgroups that did not exist before up,
// deepest first (rmdir succeeds only on empty cgroups).
func removeCgroups(h hostState) {
	cgs, _ := filepath.Glob(kubepodsCgroups)
	for _, cg := range cgs {
		if h.Existed[cg] {
			continue
		}
		var dirs []string
		filepath.WalkDir(cg, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil {
				logf("rmdir %s: %v", dirs[i], err)
			}
		}
	}
}

func removeLinksInto(dir, target string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if dst, err := os.Readlink(p); err == nil && strings.HasPrefix(dst, target) {
			os.Remove(p)
		}
	}
}

// leftovers describes what survived down, or returns "".
func leftovers(l layout, cache string) string {
	var left []string
	if pids := strays(l, cache); len(pids) > 0 {
		left = append(left, fmt.Sprintf("processes %v", pids))
	}
	if mps := mountsUnder(l.dir); len(mps) > 0 {
		left = append(left, fmt.Sprintf("mounts %v", mps))
	}
	if exec.Command("ip", "link", "show", bridgeName).Run() == nil {
		left = append(left, "bridge "+bridgeName)
	}
	return strings.Join(left, ", ")
}
