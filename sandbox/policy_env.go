package sandbox

import (
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/tools"
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

// toolOptions sets the policy's environment and output redaction on the
// bash tool's commands (info is the backend's). Every command gets the
// allowed host variables and the fixed ones before its own entries (which
// override them). A backend whose commands start from the host environment
// (ops.CapHostEnv, the local backend) keeps it while Allow is nil (pi's
// behaviour); once Allow is set its base becomes the allowed host
// variables alone. The variables drop names (an inject rule's) are never
// passed from the host. Output is redacted as it streams for the calls the
// policy's redaction marked ([withStreamRedaction]).
func toolOptions(info ops.Info, e EnvPolicy, drop []string) tools.Options {
	host, set := withoutNames(e.hostEnv(os.Environ()), drop), e.setEnv()
	opts := tools.Options{Output: redactOutput}
	switch {
	case !info.Has(ops.CapHostEnv):
		opts.Env = append(host, set...)
	case e.Allow != nil:
		opts.Env, opts.BaseEnv = set, append([]string{}, host...)
	case len(drop) > 0:
		opts.Env, opts.BaseEnv = set, withoutNames(os.Environ(), drop)
	default:
		opts.Env = set
	}
	return opts
}
