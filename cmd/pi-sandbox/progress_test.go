package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

// screen replays what progress writes to a terminal: lines, "\r",
// cursor-up and clear-to-end; colours are dropped.
func screen(out string) []string {
	lines := []string{""}
	row := 0
	esc := regexp.MustCompile(`^\x1b\[(\d*)([AJm])`)
	for i := 0; i < len(out); {
		if m := esc.FindStringSubmatch(out[i:]); m != nil {
			n, _ := strconv.Atoi(m[1])
			switch m[2] {
			case "A":
				row -= n
			case "J":
				lines = lines[:row+1]
				lines[row] = ""
			}
			i += len(m[0])
			continue
		}
		switch out[i] {
		case '\r':
		case '\n':
			row++
			if row == len(lines) {
				lines = append(lines, "")
			}
		default:
			lines[row] += out[i : i+1]
		}
		i++
	}
	return lines[:len(lines)-1] // the cursor's empty line
}

func TestProgressTerminal(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	p := newProgressClock(&buf, true, func() time.Time { return now })
	args := json.RawMessage(`{"command":"make test\nmore"}`)
	p.emit(loop.TurnStart{})
	p.emit(loop.ToolExecutionStart{ToolCallID: "b", ToolName: "bash", Args: args})
	p.emit(loop.ToolExecutionStart{ToolCallID: "r", ToolName: "read", Args: json.RawMessage(`{"path":"go.mod"}`)})
	now = now.Add(1500 * time.Millisecond)
	p.emit(loop.ToolExecutionUpdate{ToolCallID: "b", ToolName: "bash", Args: args, PartialResult: loop.TextResult("one\ntwo\n\nthree\nfour\n", nil)})
	got := strings.Join(screen(buf.String()), "\n")
	want := "── turn 1\n  ⠴ bash make test …  1.5s\n      │ two\n      │ three\n      │ four\n  ⠴ read go.mod  1.5s"
	if got != want {
		t.Errorf("live screen:\n%s\nwant\n%s", got, want)
	}

	ms := int64(12)
	p.emit(loop.ToolExecutionEnd{ToolCallID: "r", ToolName: "read", Result: loop.TextResult("x", nil), DurationMs: &ms})
	now = now.Add(time.Second)
	p.redraw() // a tick
	got = strings.Join(screen(buf.String()), "\n")
	want = "── turn 1\n  ✓ read go.mod (12ms)\n  ⠴ bash make test …  2.5s\n      │ two\n      │ three\n      │ four"
	if got != want {
		t.Errorf("after read ended:\n%s\nwant\n%s", got, want)
	}

	ms = 2500
	p.emit(loop.ToolExecutionEnd{ToolCallID: "b", ToolName: "bash", Result: loop.ErrorText("Command exited with code 2\nmore"), IsError: true, DurationMs: &ms})
	p.close()
	got = strings.Join(screen(buf.String()), "\n")
	want = "── turn 1\n  ✓ read go.mod (12ms)\n  ✗ bash make test … (2.5s): Command exited with code 2 …\ndone: 1 turn, 2 tool calls (1 failed) in 2.5s"
	if got != want {
		t.Errorf("final screen:\n%s\nwant\n%s", got, want)
	}
}

func TestProgressFitsWidth(t *testing.T) {
	var buf bytes.Buffer
	p := newProgressClock(&buf, true, time.Now)
	p.width = 30
	p.emit(loop.ToolExecutionStart{ToolCallID: "x", ToolName: "grep", Args: json.RawMessage(`{"pattern":"` + strings.Repeat("a", 100) + `"}`)})
	for _, l := range screen(buf.String()) {
		if n := len([]rune(l)); n >= 30 {
			t.Errorf("line of %d runes: %q", n, l)
		}
	}
}

func TestProgressTicker(t *testing.T) {
	// The real ticker redraws and stops cleanly (run with -race).
	var buf syncBuffer
	p := newProgress(&buf, true)
	p.emit(loop.ToolExecutionStart{ToolCallID: "x", ToolName: "bash", Args: json.RawMessage(`{"command":"sleep"}`)})
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(buf.String(), "bash sleep") < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling for the ticker's redraw
	}
	p.close()
	if strings.Count(buf.String(), "bash sleep") < 2 {
		t.Error("the ticker never redrew the live block")
	}
}

func TestSummarizeArgs(t *testing.T) {
	for in, want := range map[string]string{
		`{"command":"ls -la"}`:                    "ls -la",
		`{"path":"a.go","offset":3}`:              "a.go",
		`{"pattern":"TODO","path":"src"}`:         "TODO in src",
		`{"text":"<&>"}`:                          `{"text":"<&>"}`,
		`{"x":"` + strings.Repeat("y", 80) + `"}`: `{"x":"` + strings.Repeat("y", 53) + "…",
	} {
		if got := summarizeArgs(json.RawMessage(in)); got != want {
			t.Errorf("%s: got %q, want %q", in, got, want)
		}
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The plain log sums the usage of the assistant messages and ends with the
// whole final answer (not cut to five lines as in the turn).
func TestProgressUsageAndFinalAnswer(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	p := newProgressClock(&buf, false, func() time.Time { return now })
	p.emit(loop.TurnStart{})
	p.emit(loop.MessageEnd{Message: &loop.AssistantMessage{Content: []loop.Part{{Type: "text", Text: "Looking."}}, StopReason: loop.StopToolUse,
		Usage: &loop.Usage{Input: 10, Output: 5, CacheRead: 2, CacheWrite: 1}}})
	answer := "Fixed.\n1\n2\n3\n4\n5\n6"
	p.emit(loop.TurnStart{})
	p.emit(loop.MessageEnd{Message: &loop.AssistantMessage{Content: []loop.Part{{Type: "text", Text: answer}}, StopReason: loop.StopStop,
		Usage: &loop.Usage{Input: 20, Output: 7, CacheRead: 12}}})
	now = now.Add(1500 * time.Millisecond)
	p.close()
	want := "done: 2 turns, 0 tool calls in 1.5s; tokens: 30 in, 12 out, 14 cache read, 1 cache write\n\n" + answer + "\n"
	if got := buf.String(); !strings.HasSuffix(got, want) {
		t.Errorf("log ends\n%q\nwant\n%q", got, want)
	}
}
