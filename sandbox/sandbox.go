package sandbox

import (
	"context"
	"errors"
	"os"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/tools"
)

// Sandbox is an open backend with its tools and policy.
type Sandbox struct {
	backend ops.Backend
	tools   []loop.Tool

	policy *compiledPolicy
	audit  *auditLog
	egress *egress // the session's proxy (egress.go); nil without network rules
	auto   *autoCheckpoint
}

// OpenBackend makes a sandbox on a backend the caller opened (any
// [ops.Backend]): cfg's confinement and policy apply. The sandbox owns b:
// Close closes it, also when OpenBackend fails. Package
// [github.com/pi-sandbox/pi-sandbox/sandbox/open] opens the built-in
// backends by name (local, docker, ssh) and calls OpenBackend.
func OpenBackend(ctx context.Context, b ops.Backend, cfg Config) (*Sandbox, error) {
	if b == nil {
		return nil, errors.New("sandbox: nil backend")
	}
	s, err := newSandbox(ctx, b, cfg)
	if err != nil {
		b.Close() // safe twice (ops.Backend.Close)
	}
	return s, err
}

// newSandbox compiles the policy, confines b and makes the tools with the
// policy's options; the audit log opens last.
func newSandbox(ctx context.Context, b ops.Backend, cfg Config) (*Sandbox, error) {
	pol, err := compilePolicy(cfg.Policy, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	// A backend that confines in the target (the helper) does it on its
	// own view; any other gets the check-then-use wrapper.
	if !cfg.Unconfined {
		if b, err = Confine(ctx, b, roots(b.Info(), cfg)); err != nil {
			return nil, err
		}
	}
	s := &Sandbox{backend: b, policy: pol}
	if cfg.Policy.AuditLog != "" {
		if s.audit, err = openAudit(cfg.Policy.AuditLog, pol.redact); err != nil {
			return nil, err
		}
	}
	// The policy's environment and redaction are settings of the bash
	// tool's commands: the tools call b itself, with all it offers.
	// Streamed output is redacted before the tool cuts a window of it.
	// With network rules the commands also get the session's proxy.
	opts := toolOptions(b.Info(), cfg.Policy.Env, pol.inject.names)
	if len(pol.egress) > 0 {
		if s.egress, err = startEgress(ctx, b, pol, cfg.Policy.Network, s.audit); err != nil {
			if s.audit != nil {
				s.audit.close()
			}
			return nil, err
		}
		opts.Env = append(opts.Env, s.egress.env...)
	}
	s.tools = tools.AllWith(b, opts)
	if cfg.AutoCheckpoint {
		if err := s.startAutoCheckpoint(ctx, cfg.AutoCheckpointNote); err != nil {
			s.egress.close()
			if s.audit != nil {
				s.audit.close()
			}
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

// Backend is the backend the tools use: the one the sandbox was opened on,
// confined unless Config.Unconfined. The policy's environment and
// redaction are the bash tool's, not applied to its commands. Closing it
// closes the sandbox's backend.
func (s *Sandbox) Backend() ops.Backend { return s.backend }

// Tools returns the seven tools on Backend, in a new slice.
func (s *Sandbox) Tools() []loop.Tool { return append([]loop.Tool(nil), s.tools...) }

// LoopOptions are the policy's hooks for [loop.New]: the tool and command
// rules (before hook), redaction (of final and streamed results) and the
// audit log. Every loop running this sandbox's tools should get them.
func (s *Sandbox) LoopOptions() []loop.Option {
	var opts []loop.Option
	if s.policy != nil {
		opts = s.policy.loopOptions(s.audit)
	}
	if s.auto != nil {
		opts = append(opts, loop.WithExecMiddleware(s.auto.middleware(s)))
	}
	return opts
}

// NewLoop makes a loop over the sandbox's tools with its policy, then opts.
func (s *Sandbox) NewLoop(opts ...loop.Option) (*loop.Loop, error) {
	return loop.New(s.Tools(), append(s.LoopOptions(), opts...)...)
}

// Close closes the egress proxy (its port in the target and every
// connection through it), the backend and the audit log.
func (s *Sandbox) Close() error {
	s.egress.close()
	err := s.backend.Close()
	if s.audit != nil {
		err = errors.Join(err, s.audit.close())
		s.audit = nil
	}
	return err
}
