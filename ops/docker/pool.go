package docker

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Labels of a pool's members. A member is an Up sandbox (kind "sandbox")
// named pi-sandbox-pool-NAME-idle-X until a claim renames it
// pi-sandbox-pool-NAME-claimed-X; its labels never change.
const (
	// LabelPool holds the pool's name.
	LabelPool = "pi-sandbox.pool"
	// LabelPoolSpec holds the pool's configuration as JSON (poolSpec): a
	// cold claim creates a member from it.
	LabelPoolSpec = "pi-sandbox.pool-spec"
	// LabelPoolHash is a digest of LabelPoolSpec: Fill replaces idle
	// members whose configuration differs.
	LabelPoolHash = "pi-sandbox.pool-hash"
)

var poolNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`)

// poolSpec is the part of a Config a pool records in its members.
type poolSpec struct {
	Image          string  `json:"image"`
	Runtime        string  `json:"runtime,omitempty"`
	User           string  `json:"user"`
	WorkDir        string  `json:"workdir"`
	Memory         int64   `json:"memory"`
	CPUs           float64 `json:"cpus"`
	PidsLimit      int64   `json:"pids"`
	TmpSize        int64   `json:"tmp"`
	AllowNetwork   bool    `json:"network,omitempty"`
	WritableRootfs bool    `json:"writable_rootfs,omitempty"`
	MaxSavedOutput int64   `json:"max_saved_output,omitempty"`
	// The lifetime of a claimed member, and of an idle one.
	TTL         time.Duration `json:"ttl,omitempty"`
	IdleTimeout time.Duration `json:"idle_timeout,omitempty"`
	MaxIdle     time.Duration `json:"max_idle,omitempty"`
}

func specOf(c *Config) poolSpec {
	return poolSpec{Image: c.Image, Runtime: c.Runtime, User: c.User, WorkDir: c.WorkDir, Memory: c.Memory,
		CPUs: c.CPUs, PidsLimit: c.PidsLimit, TmpSize: c.TmpSize, AllowNetwork: c.AllowNetwork,
		WritableRootfs: c.WritableRootfs, MaxSavedOutput: c.MaxSavedOutput,
		TTL: c.TTL, IdleTimeout: c.IdleTimeout, MaxIdle: c.MaxIdle}
}

func (s poolSpec) apply(c *Config) {
	c.Image, c.Runtime, c.User, c.WorkDir = s.Image, s.Runtime, s.User, s.WorkDir
	c.Memory, c.CPUs, c.PidsLimit, c.TmpSize = s.Memory, s.CPUs, s.PidsLimit, s.TmpSize
	c.AllowNetwork, c.WritableRootfs, c.MaxSavedOutput = s.AllowNetwork, s.WritableRootfs, s.MaxSavedOutput
	c.TTL, c.IdleTimeout, c.MaxIdle = s.TTL, s.IdleTimeout, s.MaxIdle
}

// CheckPoolName refuses a pool name that cannot be part of a container
// name.
func CheckPoolName(name string) error {
	if !poolNameRE.MatchString(name) {
		return ops.ConfigError("docker: pool name %q: want letters, digits, '_', '.', '-' (at most 63, not starting with a punctuation mark)", name)
	}
	return nil
}

// poolConfig checks cfg as a pool's configuration, fills its defaults and
// labels it for pool name. Mounts and an existing container are refused.
func poolConfig(cfg Config, name string) (Config, error) {
	if err := CheckPoolName(name); err != nil {
		return cfg, err
	}
	if len(cfg.Mounts) > 0 {
		return cfg, ops.ConfigError("docker: a pool's configuration has no mounts (every claim would share the host directory)")
	}
	if cfg.Image == "" {
		return cfg, ErrNoTarget
	}
	if cfg.Container != "" {
		return cfg, ErrImageAndTarget
	}
	if err := cfg.validate(); err != nil {
		return cfg, err
	}
	cfg.fillImageDefaults()
	spec, _ := json.Marshal(specOf(&cfg))
	sum := sha256.Sum256(spec)
	labels := map[string]string{}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	labels[LabelPool] = name
	labels[LabelPoolSpec] = string(spec)
	labels[LabelPoolHash] = hex.EncodeToString(sum[:8])
	cfg.Labels = labels
	return cfg, nil
}

// checkImage fails with ops.ErrConfig when the engine lacks cfg.Image or
// cfg.Runtime: before anything is created.
func checkImage(ctx context.Context, cli *client.Client, cfg *Config) error {
	if _, err := cli.ImageInspect(ctx, cfg.Image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return imageMissing(cfg.Image)
		}
		return transportErr("image inspect", err)
	}
	_, err := CheckEngine(ctx, cli, *cfg)
	return err
}

// PoolMember is one container of a pool.
type PoolMember struct {
	ID, Name string
	Idle     bool // not claimed yet
	Running  bool
	Hash     string // LabelPoolHash
	Created  time.Time
	Labels   map[string]string
}

// poolPrefix is the start of every member's name.
func poolPrefix(name string) string { return "pi-sandbox-pool-" + name + "-" }

// PoolMembers lists pool name's members (every pool's with name "").
func PoolMembers(ctx context.Context, cli *client.Client, name string) ([]PoolMember, error) {
	f := client.Filters{}.Add("label", LabelManaged+"=true")
	if name != "" {
		f = f.Add("label", LabelPool+"="+name)
	} else {
		f = f.Add("label", LabelPool)
	}
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, transportErr("container list", err)
	}
	var out []PoolMember
	for _, c := range res.Items {
		m := PoolMember{ID: c.ID, Running: c.State == container.StateRunning, Hash: c.Labels[LabelPoolHash],
			Created: time.Unix(c.Created, 0), Labels: c.Labels}
		if len(c.Names) > 0 {
			m.Name = strings.TrimPrefix(c.Names[0], "/")
		}
		m.Idle = strings.HasPrefix(m.Name, poolPrefix(c.Labels[LabelPool])+"idle-")
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

func randomSuffix() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Fill makes sure pool name has size idle running members of cfg's
// configuration (cfg as Up takes it, without mounts) and returns the ids it
// created. Idle members of another configuration, and dead ones, are
// removed. Each new member is created as Up creates a sandbox, then its
// helper daemon is started and answers (cfg.ShimBinary as New finds it), so
// a claim needs no exec. progress, when set, hears about each step.
func Fill(ctx context.Context, cfg Config, name string, size int, progress func(string)) ([]string, error) {
	if progress == nil {
		progress = func(string) {}
	}
	pc, err := poolConfig(cfg, name)
	if err != nil {
		return nil, err
	}
	cli, closeCli, err := pc.client()
	if err != nil {
		return nil, err
	}
	defer closeCli()
	pc.Client = cli
	if err := checkImage(ctx, cli, &pc); err != nil {
		return nil, err
	}
	if _, err := readShim(&pc); err != nil {
		return nil, err
	}
	members, err := PoolMembers(ctx, cli, name)
	if err != nil {
		return nil, err
	}
	idle := 0
	for _, m := range members {
		if !m.Idle {
			continue
		}
		if m.Running && m.Hash == pc.Labels[LabelPoolHash] {
			idle++
			continue
		}
		why := "its configuration changed"
		if !m.Running {
			why = "it is not running"
		}
		progress(fmt.Sprintf("removing idle member %.12s (%s)", m.ID, why))
		if err := removeContainer(cli, m.ID); err != nil {
			return nil, err
		}
	}
	// A few members at a time: the engine serialises much of a create,
	// so more buys little.
	var (
		mu      sync.Mutex
		created []string
		errs    []error
		wg      sync.WaitGroup
		sem     = make(chan struct{}, fillParallel)
	)
	for i := idle; i < size; i++ {
		sem <- struct{}{}
		mu.Lock()
		failed := len(errs) > 0
		mu.Unlock()
		if failed {
			<-sem
			break // the first failure ends the fill
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			id, err := newMember(ctx, pc, name)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			created = append(created, id)
			progress(fmt.Sprintf("member %d of %d ready: %.12s", idle+len(created), size, id))
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return created, errs[0]
	}
	return created, nil
}

// fillParallel is how many members Fill makes at once.
const fillParallel = 4

// newMember creates one idle member of pool name and starts its helper
// daemon; pc is a poolConfig with its Client set.
func newMember(ctx context.Context, pc Config, name string) (string, error) {
	pc.name = poolPrefix(name) + "idle-" + randomSuffix()
	// Its lifetime starts at the claim; until then only MaxIdle applies.
	pc.waitClaim = true
	id, err := createContainer(ctx, pc.Client, &pc, KindSandbox)
	if err != nil {
		return "", err
	}
	// Opening it once makes the sandbox's directory and starts the
	// helper daemon; closing leaves both (an up sandbox's stay).
	b, err := New(ctx, Config{Container: id, Client: pc.Client, ShimBinary: pc.ShimBinary})
	if err == nil {
		err = b.Close()
	}
	if err != nil {
		removeContainer(pc.Client, id)
		return "", fmt.Errorf("docker: pool %s: start a member's helper: %w", name, err)
	}
	return id, nil
}

// Drain removes pool name's idle members and returns their ids; claimed
// members stay. An unknown pool has nothing to drain.
func Drain(ctx context.Context, cli *client.Client, name string) ([]string, error) {
	members, err := PoolMembers(ctx, cli, name)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, m := range members {
		if !m.Idle {
			continue
		}
		if err := removeContainer(cli, m.ID); err != nil {
			return removed, err
		}
		removeHostSock(m.Labels[LabelHostSock])
		removed = append(removed, m.ID)
	}
	return removed, nil
}

// Keep fills pool name to size (see Fill) every interval until ctx ends,
// reporting each created id to created and each failed fill to progress;
// it returns ctx's error, or a configuration error at once.
func Keep(ctx context.Context, cfg Config, name string, size int, interval time.Duration, created func(string), progress func(string)) error {
	if progress == nil {
		progress = func(string) {}
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ids, err := Fill(ctx, cfg, name, size, progress)
		for _, id := range ids {
			if created != nil {
				created(id)
			}
		}
		if err != nil {
			if errors.Is(err, ops.ErrConfig) {
				return err
			}
			if ctx.Err() == nil {
				progress(err.Error())
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
