package sandbox

import (
	"context"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// hostEnv returns the KEY=VALUE entries of the host environment that the
// allow list names, sorted.
func (e EnvPolicy) hostEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if slices.ContainsFunc(e.Allow, func(pat string) bool { return envMatch(pat, name) }) {
			out = append(out, kv)
		}
	}
	sort.Strings(out)
	return out
}

func envMatch(pat, name string) bool {
	if p, ok := strings.CutSuffix(pat, "*"); ok {
		return strings.HasPrefix(name, p)
	}
	return pat == name
}

func (e EnvPolicy) setEnv() []string {
	out := make([]string, 0, len(e.Set))
	for k, v := range e.Set {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// withEnv wraps b so every command gets the policy's environment before its
// own entries (which override it): the allowed host variables and the fixed
// ones. A backend whose commands start from the host environment
// ([ops.HostEnvRunner], the local backend) keeps it while Allow is nil (pi's
// behaviour); once Allow is set its base becomes the allowed host variables
// alone. The optional capabilities are kept.
func withEnv(b ops.Backend, e EnvPolicy) ops.Backend {
	host, set := e.hostEnv(os.Environ()), e.setEnv()
	if hr, ok := b.(ops.HostEnvRunner); ok {
		if e.Allow == nil {
			if len(set) == 0 {
				return b
			}
			return &envBackend{Backend: b, env: set}
		}
		return &envBackend{Backend: b, env: set, hr: hr, base: append([]string{}, host...)}
	}
	env := append(host, set...)
	if len(env) == 0 {
		return b
	}
	return &envBackend{Backend: b, env: env}
}

type envBackend struct {
	ops.Backend
	env []string
	// hr, when set, runs commands with base in place of the host
	// environment.
	hr   ops.HostEnvRunner
	base []string
}

var (
	_ ops.GrepFS      = (*envBackend)(nil)
	_ ops.FindFS      = (*envBackend)(nil)
	_ ops.LineCountFS = (*envBackend)(nil)
)

func (e *envBackend) Run(ctx context.Context, cmd *ops.Cmd) error {
	c := *cmd
	c.Env = append(append([]string{}, e.env...), cmd.Env...)
	if e.hr != nil {
		return e.hr.RunBaseEnv(ctx, &c, e.base)
	}
	return e.Backend.Run(ctx, &c)
}

func (e *envBackend) Grep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	if g, ok := e.Backend.(ops.GrepFS); ok {
		return g.Grep(ctx, q, fn)
	}
	return ops.ErrUnsupported
}

func (e *envBackend) Find(ctx context.Context, q *ops.FindQuery, fn func(string) error) error {
	if f, ok := e.Backend.(ops.FindFS); ok {
		return f.Find(ctx, q, fn)
	}
	return ops.ErrUnsupported
}

func (e *envBackend) CountLines(ctx context.Context, name string) (int64, int64, error) {
	return ops.CountLines(ctx, e.Backend, name)
}
