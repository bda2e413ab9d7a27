package shim

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestTargetEnvAddsTheLoginShell(t *testing.T) {
	passwd := filepath.Join(t.TempDir(), "passwd")
	os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/bin/bash\n"+
		"+nis:x:1000:1000::/:/bin/nis\n"+
		"user:x:1000:1000::/home/user:/usr/bin/zsh\n"+
		"empty:x:1001:1001::/home/empty:\n"), 0o644)
	base := []string{"PATH=/usr/bin", "HOME=/home/user"}
	for _, tc := range []struct {
		name string
		env  []string
		uid  int
		want string // "" : nothing added
	}{
		{"from passwd", base, 1000, "SHELL=/usr/bin/zsh"},
		{"empty field is /bin/sh, as bash says", base, 1001, "SHELL=/bin/sh"},
		{"no entry: bash looks it up itself", base, 4242, ""},
		{"kept when set", []string{"SHELL=/bin/dash"}, 1000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := targetEnv(tc.env, passwd, tc.uid)
			if tc.want == "" {
				if !slices.Equal(got, tc.env) {
					t.Fatalf("targetEnv = %q, want %q unchanged", got, tc.env)
				}
				return
			}
			want := append(slices.Clone(tc.env), tc.want)
			if !slices.Equal(got, want) {
				t.Fatalf("targetEnv = %q, want %q", got, want)
			}
			if len(tc.env) != 2 || tc.env[1] != "HOME=/home/user" {
				t.Fatalf("the input was changed: %q", tc.env)
			}
		})
	}
	if got := targetEnv(base, filepath.Join(t.TempDir(), "none"), 1000); !slices.Equal(got, base) {
		t.Fatalf("no passwd file: %q", got)
	}
}
