package main

import (
	"strings"
	"testing"
)

func TestFaultsVerdict(t *testing.T) {
	clean := []scenResult{
		{Backend: "local", Trials: 200},
		{Backend: "docker", Trials: 20, Survivors: 0},
		{Backend: "ssh", Scenario: "all", Skipped: "no sshd"},
	}
	okTrials := "=== RUN   TestDockerTimeoutTrials\n--- PASS: TestDockerTimeoutTrials (389.57s)\nPASS\nok  \tgithub.com/pi-sandbox/pi-sandbox/integration\t389.628s\n"
	for _, c := range []struct {
		name   string
		rows   []scenResult
		trials string
		want   string
		ok     bool
	}{
		{"clean", clean, okTrials, "faults: 0 survivors, 0 hangs, 0 failures, 0 lost files in 220 trials, skipped: ssh; docker timeout trials pass — PASS", true},
		{"no trials step", clean[:2], "", "faults: 0 survivors, 0 hangs, 0 failures, 0 lost files in 220 trials — PASS", true},
		{"survivors", []scenResult{{Trials: 10, Survivors: 3, Hangs: 1, Lost: 2}}, "", "faults: 3 survivors, 1 hangs, 0 failures, 2 lost files in 10 trials — FAIL", false},
		{"unknown count", []scenResult{{Trials: 10, Survivors: -1}}, "", "faults: 0 survivors, 0 hangs, 0 failures, 0 lost files in 10 trials, 1 survivor counts unknown — FAIL", false},
		{"trials fail", clean[:1], "--- FAIL: TestDockerTimeoutTrials\nFAIL\n", "faults: 0 survivors, 0 hangs, 0 failures, 0 lost files in 200 trials; docker timeout trials FAIL — FAIL", false},
		{"trials cut short", clean[:1], "=== RUN   TestDockerTimeoutTrials\n", "docker timeout trials did not finish — FAIL", false},
		{"nothing ran", []scenResult{{Backend: "local", Skipped: "x"}}, "", "in 0 trials, skipped: local — FAIL", false},
	} {
		got, ok := faultsVerdict(c.rows, c.trials)
		if !strings.Contains(got, c.want) || ok != c.ok || strings.Contains(got, "\n") {
			t.Errorf("%s: %q (ok %v), want %q (ok %v)", c.name, got, ok, c.want, c.ok)
		}
	}
}
