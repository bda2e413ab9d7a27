package docker

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// Lifetimes: a container with Config.TTL, IdleTimeout or MaxIdle runs
// `__shim keep` (ops/shim) as its PID 1 instead of the engine's init and the
// keep-alive script. The engine copies the helper binary into the state
// volume before the start (no exec); when a limit passes the keeper exits,
// the kernel kills every process of the container, and the engine removes
// it with its volumes (AutoRemove). A pool's member waits for its claim:
// Claim sends its PID 1 SIGUSR1 through the engine.

// Labels of a container with a lifetime (Go durations).
const (
	LabelTTL         = "pi-sandbox.ttl"
	LabelIdleTimeout = "pi-sandbox.idle-timeout"
	LabelMaxIdle     = "pi-sandbox.max-idle"
)

// Where the keeper lives in the state volume: a root-owned directory open
// to every user (sticky, as /tmp), so the keeper, whatever the sandbox's
// user, writes its state and the helper daemon the activity file there.
const (
	keepDir      = DefaultStateDir + "/keep"
	keepBinary   = keepDir + "/pi-sandbox-shim"
	keepState    = keepDir + "/lifetime.json"
	keepActivity = keepDir + "/activity"
)

// claimSignal starts a pool member's lifetime.
const claimSignal = "SIGUSR1"

func (c *Config) validateLifetime() error {
	if c.TTL < 0 || c.IdleTimeout < 0 || c.MaxIdle < 0 {
		return ops.ConfigError("docker: TTL, IdleTimeout and MaxIdle must not be negative")
	}
	if (c.TTL > 0 || c.IdleTimeout > 0 || c.MaxIdle > 0) && c.Image == "" {
		return ops.ConfigError("docker: a lifetime (TTL, IdleTimeout, MaxIdle) needs Image: an existing container keeps its own")
	}
	return nil
}

// hasLifetime reports whether the container gets the keeper as its PID 1
// (MaxIdle counts only for a pool's idle member).
func (c *Config) hasLifetime() bool {
	return c.TTL > 0 || c.IdleTimeout > 0 || (c.waitClaim && c.MaxIdle > 0)
}

// lifetimeSpec returns the keeper's command line (the container's
// entrypoint) and records the limits in labels.
func lifetimeSpec(c *Config, labels map[string]string) []string {
	argv := []string{keepBinary, "__shim", "keep", "--state", keepState}
	if c.TTL > 0 {
		argv = append(argv, "--ttl", c.TTL.String())
		labels[LabelTTL] = c.TTL.String()
	}
	if c.IdleTimeout > 0 {
		argv = append(argv, "--idle", c.IdleTimeout.String(), "--activity", keepActivity)
		labels[LabelIdleTimeout] = c.IdleTimeout.String()
	}
	if c.waitClaim {
		argv = append(argv, "--wait-claim")
		if c.MaxIdle > 0 {
			argv = append(argv, "--max-idle", c.MaxIdle.String())
			labels[LabelMaxIdle] = c.MaxIdle.String()
		}
	}
	return argv
}

// installKeeper copies the helper binary into the created (not yet
// started) container's state volume, as root, for its PID 1.
func installKeeper(ctx context.Context, cli *client.Client, id string, cfg *Config) error {
	var up *shim.Upload
	if cfg.shim != nil && cfg.shim.up != nil {
		up = cfg.shim.up // the binary for the image's architecture
	} else {
		var err error
		if up, err = shim.ReadUpload(cfg.ShimBinary); err != nil {
			return ops.ConfigError("docker: a sandbox with a lifetime runs the helper binary as its init: %w", err)
		}
	}
	f, err := up.Open()
	if err != nil {
		return ops.ConfigError("docker: %w", err)
	}
	defer f.Close()
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{Name: "keep/", Typeflag: tar.TypeDir, Mode: 0o1777})
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Name: "keep/pi-sandbox-shim", Typeflag: tar.TypeReg, Mode: 0o755, Size: up.Size})
		}
		if err == nil {
			_, err = io.Copy(tw, f)
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	if _, err := cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: DefaultStateDir, Content: pr}); err != nil {
		pr.CloseWithError(err)
		return transportErr("copy the lifetime keeper into the container", err)
	}
	return nil
}

// signalClaim starts a claimed member's lifetime (no exec: the engine
// signals its PID 1). A member without a lifetime needs nothing.
func signalClaim(ctx context.Context, cli *client.Client, m PoolMember) error {
	if m.Labels[LabelTTL] == "" && m.Labels[LabelIdleTimeout] == "" && m.Labels[LabelMaxIdle] == "" {
		return nil
	}
	_, err := cli.ContainerKill(ctx, m.ID, client.ContainerKillOptions{Signal: claimSignal})
	return err
}

// Remaining returns how long sandbox s has left before its lifetime ends
// it, and false when it has no lifetime, or none has started (an idle pool
// member without MaxIdle) or it cannot be read. The start comes from the
// keeper's state file and the last call from the activity file's time,
// read through the engine (no exec), bounded: what the sandbox wrote there
// is only shown, nothing is decided on it.
func Remaining(ctx context.Context, cli *client.Client, s Sandbox) (time.Duration, bool) {
	ttl, _ := time.ParseDuration(s.Labels[LabelTTL])
	idle, _ := time.ParseDuration(s.Labels[LabelIdleTimeout])
	maxIdle, _ := time.ParseDuration(s.Labels[LabelMaxIdle])
	if ttl <= 0 && idle <= 0 && maxIdle <= 0 {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	now := time.Now()
	var start time.Time
	st, err := readLifetime(ctx, cli, s.ID)
	switch {
	case err == nil:
		start = time.UnixMilli(st.StartMS)
	case !errors.Is(err, errNotStarted):
		return 0, false
	case s.Labels[LabelPool] != "":
		// A pool's member waiting for its claim.
		if maxIdle > 0 {
			return max(0, s.Created.Add(maxIdle).Sub(now)), true
		}
		return 0, false
	default:
		start = s.Created // its PID 1 has not written the start yet
	}
	var end time.Time
	if ttl > 0 {
		end = start.Add(ttl)
	}
	if idle > 0 {
		last := start
		if res, err := cli.ContainerStatPath(ctx, s.ID, client.ContainerStatPathOptions{Path: keepActivity}); err == nil && res.Stat.Mtime.After(last) {
			last = res.Stat.Mtime
			if last.After(now) {
				last = now // a time in the future is now
			}
		}
		if e := last.Add(idle); end.IsZero() || e.Before(end) {
			end = e
		}
	}
	if end.IsZero() {
		return 0, false
	}
	return max(0, end.Sub(now)), true
}

var errNotStarted = errors.New("lifetime not started")

// readLifetime reads the keeper's state file (at most 4 KiB).
func readLifetime(ctx context.Context, cli *client.Client, id string) (*shim.LifetimeState, error) {
	res, err := cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: keepState})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, errNotStarted
		}
		return nil, err
	}
	defer res.Content.Close()
	tr := tar.NewReader(io.LimitReader(res.Content, 16<<10))
	if _, err := tr.Next(); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(tr, 4<<10))
	if err != nil {
		return nil, err
	}
	var st shim.LifetimeState
	if err := json.Unmarshal(b, &st); err != nil || st.StartMS <= 0 {
		return nil, errors.New("docker: bad lifetime state " + strconv.Quote(string(b)))
	}
	return &st, nil
}
