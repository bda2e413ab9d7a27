package shim

import "testing"

func TestParseOOMKill(t *testing.T) {
	for in, want := range map[string]int64{
		"oom_kill_disable 0\nunder_oom 0\noom_kill 3\n":                3, // cgroup v1 memory.oom_control
		"low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n": 2, // v2 memory.events
		"oom_kill 7":   7,
		"oom 1\n":      -1,
		"":             -1,
		"oom_kill x\n": -1,
	} {
		if got := parseOOMKill([]byte(in)); got != want {
			t.Errorf("parseOOMKill(%q) = %d, want %d", in, got, want)
		}
	}
}
