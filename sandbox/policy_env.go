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

// localBase is the local backend's base environment: nil (the host's)
// while no allow list is set.
func (e EnvPolicy) localBase() []string {
	if e.Allow == nil {
		return nil
	}
	return append([]string{}, e.hostEnv(os.Environ())...)
}

// extraEnv is what every command gets on top of the backend's base: on
// docker and ssh the allowed host variables and the fixed ones, on local
// (whose base already holds the allowed host variables) the fixed ones.
func (e EnvPolicy) extraEnv(local bool) []string {
	var out []string
	if !local {
		out = e.hostEnv(os.Environ())
	}
	return append(out, e.setEnv()...)
}

// withEnv wraps b so every command gets env before its own entries (which
// override it), then in [withOutputRedaction]. The optional capabilities
// are kept.
func withEnv(b ops.Backend, env []string) ops.Backend {
	if len(env) > 0 {
		b = &envBackend{Backend: b, env: env}
	}
	return withOutputRedaction(b)
}

type envBackend struct {
	ops.Backend
	env []string
}

var (
	_ ops.GrepFS      = (*envBackend)(nil)
	_ ops.FindFS      = (*envBackend)(nil)
	_ ops.LineCountFS = (*envBackend)(nil)
)

func (e *envBackend) Run(ctx context.Context, cmd *ops.Cmd) error {
	c := *cmd
	c.Env = append(append([]string{}, e.env...), cmd.Env...)
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
