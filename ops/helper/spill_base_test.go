package helper_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// TestRunSpillBaseEnv: RunSpill honours Cmd.BaseEnv as Run does, so a
// policy that replaces the base keeps the spill in the target.
func TestRunSpillBaseEnv(t *testing.T) {
	t.Setenv("PI_TEST_HOSTVAR", "host")
	sr := open(t).(ops.SpillRunner)
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		base []string
		want string
	}{
		{"own base", nil, "host||e\n"},
		{"replaced", []string{"PI_TEST_BASE=b"}, "unset|b|e\n"},
		{"empty", []string{}, "unset||e\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &ops.Spill{Path: filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"), "out.log"), AfterBytes: 50000, AfterLines: 2000, Cap: 1 << 20}
			var out bytes.Buffer
			cmd := &ops.Cmd{
				Command: `echo "${PI_TEST_HOSTVAR-unset}|$PI_TEST_BASE|$PI_TEST_ENV"`,
				Env:     []string{"PI_TEST_ENV=e"},
				BaseEnv: c.base,
				Output:  &out,
			}
			if err := sr.RunSpill(t.Context(), cmd, s); err != nil {
				t.Fatal(err)
			}
			if out.String() != c.want {
				t.Errorf("output %q, want %q", out.String(), c.want)
			}
		})
	}
}
