package main

import (
	"strings"
	"testing"
)

// TestPoolUsageErrors: what is refused before the engine is asked, with
// exit 2 and one line naming the reason.
func TestPoolUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pool"}, "want fill, keep, ls or drain"},
		{[]string{"pool", "grow"}, `unknown subcommand "grow"`},
		{[]string{"pool", "fill", "--size", "2"}, "want one pool NAME"},
		{[]string{"pool", "fill", "--", "-bad"}, `pool name "-bad"`},
		{[]string{"pool", "fill", "p", "--size", "1", "--mount", "/tmp:/x"}, "--mount is refused"},
		{[]string{"pool", "fill", "p", "--size", "-1"}, "--size must not be negative"},
		{[]string{"pool", "keep", "p", "--size", "1", "--interval", "0s"}, "--interval must be positive"},
		{[]string{"pool", "drain"}, "want one pool NAME"},
		{[]string{"pool", "ls", "a", "b"}, "want at most one pool NAME"},
		{[]string{"up", "--pool", "p", "--image", "pi-sandbox/debian"}, "--image with --pool"},
		{[]string{"up", "--memory", "1g", "--pool", "p"}, "--memory with --pool"},
		{[]string{"up", "--no-cold"}, "--no-cold needs --pool"},
		{[]string{"up", "--pool", "p", "--backend", "k8s", "--no-cold"}, "--no-cold is for the docker backend"},
		{[]string{"up", "--pool", "p", "--backend", "k8s", "--user", "1:1"}, "--user with --pool"},
		{[]string{"up", "--pool", "p", "--kubeconfig", "k"}, "--kubeconfig, --context and --namespace need --backend k8s"},
		{[]string{"pool", "fill", "--backend", "k8s", "p", "--size", "1", "--runtime", "runsc"}, "--runtime is for the docker backend"},
		{[]string{"pool", "drain", "--backend", "k8s", "Bad_Name"}, `pool name "Bad_Name"`},
	} {
		code, out, errs := run(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 2 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errs, c.want)
		}
	}
}
