package native

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

var (
	_ ops.Backend     = (*Backend)(nil)
	_ ops.LineCountFS = (*Backend)(nil)
)

// Config configures a local backend. The zero value is usable: the current
// directory, a private spill directory, the host environment and the shim
// when the executable provides it.
type Config struct {
	// WorkDir is the working directory for tools and commands. Zero: the
	// current directory. A relative path is made absolute.
	WorkDir string

	// SpillDir is the directory for spill files. Zero: a fresh private
	// directory (mode 0700) under os.TempDir(), removed by Close. A directory
	// given here is used as it is and not removed.
	SpillDir string

	// Shell runs commands as `Shell -c COMMAND`. Zero: /bin/bash when it
	// exists, else /bin/sh.
	Shell string

	// Env is the base environment of commands; Cmd.Env is added on top.
	// Nil: the host environment (os.Environ at New).
	Env []string

	// ShimPath is an executable that runs the shim as `ShimPath __shim run`.
	// Zero: no shim (commands are killed by process group only).
	ShimPath string

	// NoShim disables the shim: commands are killed by process group only.
	NoShim bool

	// Background keeps the processes a command leaves running when it exits
	// normally (the shim stays as their owner, their output goes to a log
	// in the spill directory) until they end or Close kills them; it needs
	// the shim. Zero: they die with the command. A timeout or cancel kills
	// the whole tree either way.
	Background bool
	// MaxBackground bounds the background process groups (zero:
	// DefaultMaxBackground); a command that would leave one more gets
	// ops.ErrBackgroundLimit and its leftovers are killed.
	MaxBackground int
	// Registry, when set with Background, owns the background processes
	// instead of the backend: several backends share it (the limit counts
	// them all, Processes lists them all) and Close leaves them running;
	// Registry.Close kills them. MaxBackground is then ignored.
	Registry *Registry
	// WarmShim keeps shims that serve command after command, one started
	// ahead of the next command (warm.go), for a backend that runs many
	// (the helper); it needs the shim.
	WarmShim bool
}

// Backend is the local ops backend. It is safe for concurrent use.
type Backend struct {
	info      ops.Info
	shell     string
	env       []string
	shim      string // "" when commands run without the shim
	umask     os.FileMode
	ownsSpill bool
	bg        *background // nil without Config.Background
	sharedBG  bool        // bg is a Registry's: Close leaves it
	warm      *warmPool   // nil without Config.WarmShim
	closeOnce sync.Once
	closeErr  error
}

// New opens a local backend. ctx is not retained.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := &Backend{umask: readUmask()}
	wd := cfg.WorkDir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("local: working directory: %w", err)
		}
	}
	wd, err := filepath.Abs(wd)
	if err != nil {
		return nil, fmt.Errorf("local: working directory: %w", err)
	}
	if fi, err := os.Stat(wd); err != nil {
		return nil, fmt.Errorf("local: working directory: %w", mapErr("stat", wd, err))
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("local: working directory: %w", ops.PathError("chdir", wd, ops.ENOTDIR))
	}

	b.shell = cfg.Shell
	if b.shell == "" {
		b.shell = "/bin/sh"
		if fi, err := os.Stat("/bin/bash"); err == nil && fi.Mode().IsRegular() {
			b.shell = "/bin/bash"
		}
	}
	b.env = cfg.Env
	if b.env == nil {
		b.env = os.Environ()
	}

	var limits []string
	caps := []string{"linecount"}
	switch {
	case runtime.GOOS != "linux":
		limits = append(limits, "no shim on "+runtime.GOOS+": a process that calls setsid survives a kill")
	case cfg.NoShim:
		limits = append(limits, "no shim (disabled): a process that calls setsid survives a kill")
	case cfg.ShimPath != "":
		b.shim = cfg.ShimPath
	default:
		limits = append(limits, "no shim (this executable does not dispatch __shim): a process that calls setsid survives a kill")
	}
	if b.shim != "" {
		caps = append([]string{"shim"}, caps...)
	}

	spill := cfg.SpillDir
	if spill == "" {
		if spill, err = os.MkdirTemp("", "pi-sandbox-spill-"); err != nil {
			return nil, fmt.Errorf("local: spill directory: %w", err)
		}
		b.ownsSpill = true
	}

	uid, gid := os.Getuid(), os.Getgid()
	name, home := "", os.Getenv("HOME")
	if u, err := user.Current(); err == nil {
		name = u.Username
		if home == "" {
			home = u.HomeDir
		}
	}
	if home == "" {
		home = "/"
	}
	if cfg.Background && b.shim != "" {
		if cfg.Registry != nil {
			b.bg, b.sharedBG = cfg.Registry.g, true
		} else if b.bg, err = newBackground(cfg.MaxBackground); err != nil {
			return nil, fmt.Errorf("local: background: %w", err)
		}
		caps = append(caps, "background")
	} else {
		limits = append(limits, "processes a command leaves running die when it ends")
	}
	if cfg.WarmShim && b.shim != "" && runtime.GOOS == "linux" {
		b.warm = newWarmPool(b)
	}
	b.info = ops.Info{
		Backend:      "local",
		WorkDir:      wd,
		Home:         home,
		User:         name,
		UID:          uid,
		GID:          gid,
		OS:           runtime.GOOS,
		Arch:         runtime.GOARCH,
		Shell:        b.shell,
		SpillDir:     spill,
		Capabilities: caps,
		Limits:       limits,
	}
	return b, nil
}

// Info describes the local machine. The returned slices are copies.
func (b *Backend) Info() ops.Info {
	i := b.info
	i.Capabilities = append([]string(nil), i.Capabilities...)
	i.Limits = append([]string(nil), i.Limits...)
	return i
}

// Close removes the spill directory when New created it. It is safe to call
// twice.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		if b.warm != nil {
			b.warm.close()
		}
		if b.bg != nil && !b.sharedBG {
			b.bg.close()
		}
		if b.ownsSpill {
			if err := os.RemoveAll(b.info.SpillDir); err != nil && !errors.Is(err, os.ErrNotExist) {
				b.closeErr = fmt.Errorf("local: remove spill directory: %w", err)
			}
		}
	})
	return b.closeErr
}

// readUmask reads the process umask from /proc without changing it (setting
// and restoring it would race with concurrent file creation).
func readUmask() os.FileMode {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0o022
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Umask:"); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return os.FileMode(n) & os.ModePerm
			}
		}
	}
	return 0o022
}
