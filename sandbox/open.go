package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/tools"
)

// Sandbox is an open backend with its tools and policy.
type Sandbox struct {
	// Backend is the confined backend the tools use (unless
	// Config.Unconfined), with the policy's environment applied.
	Backend ops.Backend
	Tools   []loop.Tool

	policy *compiledPolicy
	audit  *auditLog
}

// Open opens the backend cfg describes and builds the tools on it.
func Open(ctx context.Context, cfg Config) (*Sandbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	open := func(ctx context.Context) (ops.Backend, error) {
		switch cfg.Backend {
		case "", "local":
			return openLocal(ctx, cfg)
		case "docker":
			return openDocker(ctx, cfg)
		case "ssh":
			return openSSH(ctx, cfg)
		}
		return nil, fmt.Errorf("sandbox: unknown backend %q", cfg.Backend)
	}
	return finish(ctx, cfg, open)
}

// finish compiles the policy, opens the backend with open, and wraps it:
// environment, then confinement; the audit log opens last.
func finish(ctx context.Context, cfg Config, open func(context.Context) (ops.Backend, error)) (*Sandbox, error) {
	pol, err := compilePolicy(cfg.Policy, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	b, err := open(ctx)
	if err != nil {
		return nil, err
	}
	local := b.Info().Backend == "local"
	if !cfg.Unconfined {
		cb, err := Confine(ctx, b, roots(b.Info(), cfg))
		if err != nil {
			b.Close()
			return nil, err
		}
		b = cb
	}
	b = withEnv(b, cfg.Policy.Env.extraEnv(local))
	s := &Sandbox{Backend: b, Tools: tools.All(b), policy: pol}
	if cfg.Policy.AuditLog != "" {
		if s.audit, err = openAudit(cfg.Policy.AuditLog, pol.redact); err != nil {
			b.Close()
			return nil, err
		}
	}
	return s, nil
}

// roots lists the confinement roots: the working directory, the spill
// directory, and the configured extra roots.
func roots(info ops.Info, cfg Config) []Root {
	rs := []Root{{Path: info.WorkDir}}
	if info.SpillDir != "" {
		rs = append(rs, Root{Path: info.SpillDir})
	}
	for _, p := range cfg.AllowRoots {
		rs = append(rs, Root{Path: p})
	}
	for _, p := range cfg.ReadOnlyRoots {
		rs = append(rs, Root{Path: p, ReadOnly: true})
	}
	return rs
}

// LoopOptions are the policy's hooks for [loop.New]: the tool and command
// rules (before hook), redaction (of final and streamed results) and the
// audit log. Every loop running this sandbox's tools should get them.
func (s *Sandbox) LoopOptions() []loop.Option {
	if s.policy == nil {
		return nil
	}
	return s.policy.loopOptions(s.audit)
}

// NewLoop makes a loop over the sandbox's tools with its policy, then opts.
func (s *Sandbox) NewLoop(opts ...loop.Option) (*loop.Loop, error) {
	return loop.New(s.Tools, append(s.LoopOptions(), opts...)...)
}

// Close closes the backend and the audit log.
func (s *Sandbox) Close() error {
	err := s.Backend.Close()
	if s.audit != nil {
		err = errors.Join(err, s.audit.close())
		s.audit = nil
	}
	return err
}
