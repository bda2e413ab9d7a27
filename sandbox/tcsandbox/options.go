package tcsandbox

import (
	"fmt"
	"os"

	"github.com/testcontainers/testcontainers-go"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// settings are what this package's options set.
type settings struct {
	cfg       docker.Config // the profile (Image is Run's argument)
	workspace string        // host directory copied into cfg.WorkDir
	policy    sandbox.Policy
	sbConfig  func(*sandbox.Config)
}

// Option is one of this package's options. It is a
// testcontainers.ContainerCustomizer whose Customize does nothing: Run
// applies it to its settings (the testcontainers-go module convention).
type Option func(*settings) error

// Customize implements testcontainers.ContainerCustomizer.
func (Option) Customize(*testcontainers.GenericContainerRequest) error { return nil }

var _ testcontainers.ContainerCustomizer = Option(nil)

// WithRuntime runs the container on the engine's OCI runtime name, e.g.
// "runsc" for gVisor. A runtime the engine does not list fails Run.
func WithRuntime(name string) Option {
	return func(s *settings) error { s.cfg.Runtime = name; return nil }
}

// WithWorkspace copies the host directory dir into the working directory
// (/workspace) before the container starts, owned by the sandbox user.
func WithWorkspace(dir string) Option {
	return func(s *settings) error {
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("tcsandbox: workspace: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("tcsandbox: workspace %s is not a directory", dir)
		}
		s.workspace = dir
		return nil
	}
}

// WithPolicy is the policy of the sandboxes (*Container).Sandbox opens.
func WithPolicy(p sandbox.Policy) Option {
	return func(s *settings) error { s.policy = p; return nil }
}

// WithSandboxConfig adjusts the sandbox.Config that (*Container).Sandbox
// opens with (extra roots, Unconfined ...), after the defaults are set.
func WithSandboxConfig(f func(*sandbox.Config)) Option {
	return func(s *settings) error { s.sbConfig = f; return nil }
}

// WithWorkDir changes the working directory (default /workspace, a fresh
// volume).
func WithWorkDir(dir string) Option {
	return func(s *settings) error { s.cfg.WorkDir = dir; return nil }
}

// WithUser runs commands and file operations as "UID:GID" (default
// 1000:1000).
func WithUser(user string) Option {
	return func(s *settings) error { s.cfg.User = user; return nil }
}

// WithLimits sets the memory limit in bytes, the CPU limit and the process
// limit; zero keeps a default (2 GiB, 2, 2048), negative means none.
func WithLimits(memory int64, cpus float64, pids int64) Option {
	return func(s *settings) error {
		s.cfg.Memory, s.cfg.CPUs, s.cfg.PidsLimit = memory, cpus, pids
		return nil
	}
}

// Relaxations of the hardened profile, each named for what it gives up
// (docker.Config's fields of the same names).

// WithAllowNetwork attaches the container to the engine's default network.
// Under runsc registered by `make runtimes` the sandbox still has only a
// loopback interface.
func WithAllowNetwork() Option {
	return func(s *settings) error { s.cfg.AllowNetwork = true; return nil }
}

// WithWritableRootfs leaves the root file system writable.
func WithWritableRootfs() Option {
	return func(s *settings) error { s.cfg.WritableRootfs = true; return nil }
}

// WithAllowNewPrivileges drops no-new-privileges.
func WithAllowNewPrivileges() Option {
	return func(s *settings) error { s.cfg.AllowNewPrivileges = true; return nil }
}

// WithCapAdd keeps these capabilities despite dropping all others.
func WithCapAdd(caps ...string) Option {
	return func(s *settings) error { s.cfg.CapAdd = append(s.cfg.CapAdd, caps...); return nil }
}

// WithNoInit runs without the engine's init as PID 1.
func WithNoInit() Option {
	return func(s *settings) error { s.cfg.NoInit = true; return nil }
}
