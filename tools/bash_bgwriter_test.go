package tools_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestBashBackgroundWriterHandedOff: a command whose background process
// keeps writing to the call's output (`yes &`) no longer holds the call
// open forever: ops.ExitOutputLimit after the shell exited, the call ends
// with the output so far and a note, and the writer goes on in the
// background with its own log, listed by Processes.
func TestBashBackgroundWriterHandedOff(t *testing.T) {
	b, bash := localBash(t)
	if !b.Info().Has("helper") {
		t.Fatalf("no helper: %v", b.Info().Limits)
	}
	// On a starved machine the writer can pause longer than pi's 100 ms
	// exit grace, which legitimately ends the call (and the writer) before
	// the bound: one hand-off in three attempts passes.
	re := regexp.MustCompile(`\[pi-sandbox: processes this command left running kept writing 2s after it exited; they go on in the background, their output goes to (\S+/pi-bg-[0-9a-f]+\.log) \(see ps\)\]`)
	var text string
	for range 3 {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		start := time.Now()
		var err error
		text, _, err = localRun(t, bash, ctx, map[string]any{"command": "yes & echo started"})
		open := ctx.Err() != nil
		cancel()
		if open {
			t.Fatalf("the call was still open after %v", time.Since(start))
		}
		if err != nil {
			t.Fatalf("call: %v (%s)", err, bashTailOf(text))
		}
		if re.MatchString(text) {
			break
		}
	}
	if !re.MatchString(text) {
		t.Fatalf("no hand-off note in three attempts; the last: %q", bashTailOf(text))
	}
	ps, err := b.Processes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range ps {
		found = found || (p.Command == "yes" && strings.Contains(p.Log, "pi-bg-"))
	}
	if !found {
		t.Errorf("yes is not among the background processes: %+v", ps)
	}
}

func bashTailOf(s string) string {
	if len(s) > 600 {
		return "…" + s[len(s)-600:]
	}
	return s
}
