package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// ErrPoolEmpty is a claim's failure when the pool has no idle member and a
// cold start was not allowed.
var ErrPoolEmpty = errors.New("no idle member left")

// Claim takes one idle member of pool name and returns its id; from then on
// it is an ordinary Up sandbox. The member is taken by renaming it from
// pi-sandbox-pool-NAME-idle-X to pi-sandbox-pool-NAME-claimed-X: the
// engine renames a container under its lock and refuses a rename to the
// name it already has ("Renaming a container with the same name as its
// current name"), so of concurrent claims of one member, which all ask for
// the same new name, exactly one succeeds; the others try the next. Its liveness comes from the engine (no exec): a member
// that is not running is removed, never handed out. With no idle member
// left Claim creates one cold from the configuration in the members'
// labels (saying so to note), or fails with ErrPoolEmpty when noCold is
// set. A pool without any member is ops.ErrConfig.
func Claim(ctx context.Context, cli *client.Client, name string, noCold bool, note func(string)) (string, error) {
	if err := CheckPoolName(name); err != nil {
		return "", err
	}
	members, err := PoolMembers(ctx, cli, name)
	if err != nil {
		return "", err
	}
	if len(members) == 0 {
		return "", ops.ConfigError("docker: no pool %s (pi-sandbox pool fill makes one)", name)
	}
	// Claimers start at random members, so they seldom collide.
	idle := members[:0:0]
	for _, m := range members {
		if m.Idle {
			idle = append(idle, m)
		}
	}
	rand.Shuffle(len(idle), func(i, j int) { idle[i], idle[j] = idle[j], idle[i] })
	for _, m := range idle {
		claimed := strings.Replace(m.Name, "-idle-", "-claimed-", 1)
		if _, err := cli.ContainerRename(ctx, m.ID, client.ContainerRenameOptions{NewName: claimed}); err != nil {
			continue // another claim took it (or it is gone)
		}
		res, err := cli.ContainerInspect(ctx, m.ID, client.ContainerInspectOptions{})
		if err != nil {
			continue
		}
		if st := res.Container.State; st == nil || !st.Running || st.Paused {
			removeContainer(cli, m.ID)
			continue
		}
		if err := signalClaim(ctx, cli, m); err != nil {
			// Its lifetime cannot start: never handed out.
			removeContainer(cli, m.ID)
			continue
		}
		return m.ID, nil
	}
	if noCold {
		return "", fmt.Errorf("docker: pool %s: %w (and --no-cold starts none)", name, ErrPoolEmpty)
	}
	var spec poolSpec
	last := members[len(members)-1] // the newest member has the newest configuration
	if err := json.Unmarshal([]byte(last.Labels[LabelPoolSpec]), &spec); err != nil {
		return "", fmt.Errorf("docker: pool %s: member %.12s: label %s: %w", name, last.ID, LabelPoolSpec, err)
	}
	cfg := Config{Client: cli, Labels: map[string]string{}}
	spec.apply(&cfg)
	cfg.MaxIdle = 0 // claimed at once: its lifetime starts now
	for k, v := range last.Labels {
		switch k {
		case LabelKind, LabelManaged, LabelHelperKey, LabelMaxSavedOutput, LabelTTL, LabelIdleTimeout, LabelMaxIdle:
		default:
			cfg.Labels[k] = v
		}
	}
	if note != nil {
		note(fmt.Sprintf("pool %s has no idle member: starting one cold", name))
	}
	if err := checkImage(ctx, cli, &cfg); err != nil {
		return "", err
	}
	cfg.name = poolPrefix(name) + "claimed-" + randomSuffix()
	return createContainer(ctx, cli, &cfg, KindSandbox)
}
