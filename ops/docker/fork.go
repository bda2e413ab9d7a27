package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// LabelForkOf marks a sandbox made by fork with the id of the container
// it was forked from.
const LabelForkOf = "pi-sandbox.fork-of"

// ForkConfig is the configuration of a new up sandbox like container id
// (an up sandbox or a claimed pool member): its image, runtime, user,
// working directory, memory, CPU, process and /tmp limits, network and
// root file system, saved-output total and the labels it was given, with
// a fresh working-directory volume in place of any bind mount, and no
// lifetime (--ttl, --idle-timeout are not carried over).
func ForkConfig(ctx context.Context, cli *client.Client, id string) (Config, error) {
	res, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return Config{}, fmt.Errorf("docker: fork: no container %q", id)
		}
		return Config{}, transportErr("container inspect", err)
	}
	ci := res.Container
	if ci.Config == nil || ci.HostConfig == nil || ci.Config.Labels[LabelManaged] != "true" || ci.Config.Labels[LabelKind] != KindSandbox {
		return Config{}, fmt.Errorf("docker: fork: container %q is not a pi-sandbox up sandbox (pi-sandbox up makes one)", id)
	}
	labels := ci.Config.Labels
	var c Config
	if spec, ok := labels[LabelPoolSpec]; ok {
		var s poolSpec
		if err := json.Unmarshal([]byte(spec), &s); err != nil {
			return Config{}, fmt.Errorf("docker: fork: container %q: its pool label: %w", id, err)
		}
		s.apply(&c)
		c.TTL, c.IdleTimeout, c.MaxIdle = 0, 0, 0
	} else {
		hc := ci.HostConfig
		c.Image, c.Runtime, c.User, c.WorkDir = ci.Config.Image, hc.Runtime, ci.Config.User, ci.Config.WorkingDir
		c.Memory, c.CPUs, c.PidsLimit = -1, -1, -1
		if hc.Memory > 0 {
			c.Memory = hc.Memory
		}
		if hc.NanoCPUs > 0 {
			c.CPUs = float64(hc.NanoCPUs) / 1e9
		}
		if hc.PidsLimit != nil && *hc.PidsLimit > 0 {
			c.PidsLimit = *hc.PidsLimit
		}
		for _, opt := range strings.Split(hc.Tmpfs["/tmp"], ",") {
			if v, ok := strings.CutPrefix(opt, "size="); ok {
				c.TmpSize, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		c.AllowNetwork = hc.NetworkMode != "none"
		c.WritableRootfs = !hc.ReadonlyRootfs
		if v, err := strconv.ParseInt(labels[LabelMaxSavedOutput], 10, 64); err == nil {
			c.MaxSavedOutput = v
		}
	}
	c.Labels = map[string]string{}
	for k, v := range labels {
		if !internalLabel(k) {
			c.Labels[k] = v
		}
	}
	c.Labels[LabelForkOf] = ci.ID
	return c, nil
}

// internalLabel is a label pi-sandbox sets on its own: a fork gets its own.
func internalLabel(k string) bool {
	switch k {
	case LabelManaged, LabelKind, LabelHost, LabelPID, LabelHelperKey, LabelMaxSavedOutput,
		LabelPool, LabelPoolSpec, LabelPoolHash, LabelTTL, LabelIdleTimeout, LabelMaxIdle, LabelForkOf:
		return true
	}
	return false
}
