package main

import "testing"

func TestRuntimesDetail(t *testing.T) {
	for _, c := range []struct {
		names []string
		def   string
		want  string
	}{
		{[]string{"runc", "runsc"}, "runc", "runc (default), runsc"},
		{[]string{"runc"}, "runc", "runc (default); no runsc (gVisor): `make runtimes` registers it"},
	} {
		if got := runtimesDetail(c.names, c.def); got != c.want {
			t.Errorf("runtimesDetail(%q, %q) = %q, want %q", c.names, c.def, got, c.want)
		}
	}
}
