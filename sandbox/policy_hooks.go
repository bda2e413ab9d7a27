package sandbox

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// compiledPolicy is a Policy ready to run: rules compiled, secrets read.
type compiledPolicy struct {
	commands  *commandPolicy
	denyTools []string
	redact    *redactor
	egress    egressRules
	inject    *compiledInject
	roots     *x509.CertPool // what an inject host's certificate is verified with; nil: none read
}

// compilePolicy compiles p; lookup reads the secrets' host environment
// (nil: none is read, for checking a file). Env.Set values named by
// Redact.Env are secrets too.
func compilePolicy(p Policy, lookup func(string) (string, bool)) (*compiledPolicy, error) {
	cp := &compiledPolicy{denyTools: slices.Clone(p.DenyTools)}
	var err error
	if cp.commands, err = compileCommands(p.Commands); err != nil {
		return nil, err
	}
	for _, name := range p.DenyTools {
		if err := checkToolName(name); err != nil {
			return nil, err
		}
	}
	if cp.inject, err = compileInject(p.Network.Inject, lookup); err != nil {
		return nil, err
	}
	if cp.redact, err = compileRedactor(p.Redact, secretValues(p, lookup), cp.inject.secrets...); err != nil {
		return nil, err
	}
	for _, pat := range p.Env.Allow {
		if pat == "" || pat == "*" {
			return nil, fmt.Errorf("sandbox: policy: env allow entry %q (name the variables)", pat)
		}
	}
	if cp.egress, err = compileHostRules(p.Network.Allow); err != nil {
		return nil, err
	}
	cp.egress = append(cp.egress, cp.inject.allowRules()...)
	if lookup != nil && (len(p.Network.EgressCA) > 0 || len(cp.inject.rules) > 0) {
		if cp.roots, err = upstreamRoots(p.Network.EgressCA); err != nil {
			return nil, err
		}
	}
	if p.Network.MaxConnections < 0 {
		return nil, ops.ConfigError("sandbox: policy: network maxConnections %d is negative", p.Network.MaxConnections)
	}
	return cp, nil
}

// beforeToolCall blocks denied tools and bash commands the rules refuse.
func (cp *compiledPolicy) beforeToolCall(ctx context.Context, call *loop.Call) (*loop.Block, error) {
	if slices.Contains(cp.denyTools, call.Name) {
		return &loop.Block{Reason: fmt.Sprintf("Tool %s is blocked by policy", call.Name)}, nil
	}
	if cp.commands == nil || call.Name != "bash" {
		return nil, nil
	}
	cmd, _ := call.Args["command"].(string)
	if reason := cp.commands.check(cmd); reason != "" {
		return &loop.Block{Reason: reason}, nil
	}
	return nil, nil
}

// loopOptions installs the policy: the audit log outermost on both chains
// (it sees blocks and redacted results), then the rules, then redaction.
func (cp *compiledPolicy) loopOptions(audit *auditLog) []loop.Option {
	var opts []loop.Option
	if audit != nil {
		opts = append(opts, loop.WithBeforeMiddleware(audit.before()), loop.WithExecMiddleware(audit.exec()))
	}
	if cp.commands != nil || len(cp.denyTools) > 0 {
		opts = append(opts, loop.WithBeforeToolCall(cp.beforeToolCall))
	}
	if cp.redact != nil {
		opts = append(opts, loop.WithExecMiddleware(cp.redact.middleware()))
	}
	return opts
}
