package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The host state the kubelet and CNI change outside the state directory. up records it
// before anything starts; down (and up, once the node is Ready, for the sysctls) puts it
// back.
var (
	// kubeletSysctls are the tunables the kubelet's container manager sets at start
	// (pkg/kubelet/cm/container_manager_linux.go setupKernelTunables).
	kubeletSysctls = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic",
		"kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}
	// hostPaths are created whatever the configuration says: by the kubelet (its
	// /var/log/containers symlink directory, its device-plugin socket in
	// /var/lib/kubelet/device-plugins) and by CNI (libcni's result cache in /var/lib/cni).
	hostPaths = []string{"/var/log/containers", "/var/lib/kubelet", "/var/lib/cni"}
	// kubepodsCgroups are where the kubelet puts pods (cgroupfs driver, cgroup root /).
	kubepodsCgroups = "/sys/fs/cgroup/*/kubepods"
)

type hostState struct {
	Sysctls map[string]string
	Existed map[string]bool // hostPaths and kubepods cgroups that existed before up
}

func recordHost(l layout) error {
	h := hostState{Sysctls: map[string]string{}, Existed: map[string]bool{}}
	for _, s := range kubeletSysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil {
			h.Sysctls[s] = strings.TrimSpace(string(b))
		}
	}
	cg, _ := filepath.Glob(kubepodsCgroups)
	for _, p := range append(append([]string{}, hostPaths...), cg...) {
		h.Existed[p] = fileExists(p)
	}
	b, _ := json.MarshalIndent(h, "", "  ")
	if err := os.WriteFile(l.hostRecord(), b, 0o644); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

func loadHost(l layout) hostState {
	var h hostState
	if b, err := os.ReadFile(l.hostRecord()); err == nil {
		json.Unmarshal(b, &h)
	}
	return h
}

// restoreSysctls writes back the tunables recorded before the kubelet started.
func restoreSysctls(l layout) {
	for s, v := range loadHost(l).Sysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil && strings.TrimSpace(string(b)) != v {
			if err := os.WriteFile("/proc/sys/"+s, []byte(v), 0o644); err != nil {
				logf("could not restore %s=%s: %v", s, v, err)
			}
		}
	}
}
