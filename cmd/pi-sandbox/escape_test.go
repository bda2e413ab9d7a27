package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

func TestEscapeControls(t *testing.T) {
	for _, c := range []struct {
		in, want, wantKeep string
	}{
		{"plain é ⠋\ttab", "plain é ⠋\ttab", "plain é ⠋\ttab"},
		{"a\x1b]0;pwned\x07b", `a\x1b]0;pwned\x07b`, `a\x1b]0;pwned\x07b`},
		{"\x1b[2J\r\x00\x7f", `\x1b[2J\r\x00\x7f`, `\x1b[2J\r\x00\x7f`},
		{"csi \u009b2J and \u0085", `csi \u009b2J and \u0085`, `csi \u009b2J and \u0085`},
		{"bad \xff\xc2 utf8", `bad \xff\xc2 utf8`, `bad \xff\xc2 utf8`},
		{"two\nlines", `two\nlines`, "two\nlines"},
	} {
		if got := escapeControls(c.in, false); got != c.want {
			t.Errorf("escapeControls(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := escapeControls(c.in, true); got != c.wantKeep {
			t.Errorf("escapeControls(%q, keep newlines) = %q, want %q", c.in, got, c.wantKeep)
		}
	}
}

// TestEscapeJSONControls: encoding/json escapes C0 controls itself; DEL
// and C1 controls, which it leaves raw, are escaped too, and the value
// decodes unchanged.
func TestEscapeJSONControls(t *testing.T) {
	in := "a\x1b[2J\x07 \x7f \u009b2J \u0085 é\x00"
	b, err := loop.MarshalNoEscape(map[string]string{"command": in})
	if err != nil {
		t.Fatal(err)
	}
	out := escapeJSONControls(b)
	if bytes.ContainsAny(out, "\x1b\x07\x7f\x00\u009b\u0085") {
		t.Errorf("raw control characters left in %q", out)
	}
	var m map[string]string
	if err := json.Unmarshal(out, &m); err != nil || m["command"] != in {
		t.Errorf("%s decodes to %q (%v), want %q", out, m["command"], err, in)
	}
}

// TestProgressEscapesControls: what a sandbox puts in a call's arguments,
// streaming output, error text or the model's answer reaches the display
// with its control characters escaped, on a terminal and in the plain log.
func TestProgressEscapesControls(t *testing.T) {
	const evil = "x\x1b]0;pwned\x07y\x1b[2J\u009bz"
	for _, tty := range []bool{true, false} {
		var buf bytes.Buffer
		p := newProgressClock(&buf, tty, time.Now)
		args, _ := json.Marshal(map[string]string{"command": "echo " + evil})
		p.emit(loop.TurnStart{})
		p.emit(loop.ToolExecutionStart{ToolCallID: "b", ToolName: "bash", Args: args})
		p.emit(loop.ToolExecutionUpdate{ToolCallID: "b", ToolName: "bash", Args: args, PartialResult: loop.TextResult("out "+evil+"\r\n", nil)})
		p.emit(loop.ToolExecutionEnd{ToolCallID: "b", ToolName: "bash", Result: loop.ErrorText("failed " + evil), IsError: true})
		p.emit(loop.MessageEnd{Message: &loop.AssistantMessage{Content: []loop.Part{{Type: "text", Text: "answer " + evil}}, StopReason: loop.StopStop}})
		p.close()
		out := buf.String()
		// The display's own sequences (carriage return, cursor up, clear
		// below, dim) are the only ones left.
		out = ownSequences.ReplaceAllString(out, "")
		if strings.ContainsAny(out, "\x1b\x07\u009b") {
			t.Errorf("tty %v: raw control characters in %q", tty, out)
		}
		for _, want := range []string{`echo x\x1b]0;pwned\x07y\x1b[2J\u009bz`, `failed x\x1b]0;pwned`, `answer x\x1b]0;pwned`} {
			if !strings.Contains(out, want) {
				t.Errorf("tty %v: %q does not show %s", tty, out, want)
			}
		}
	}
}

var ownSequences = regexp.MustCompile(`\r|\x1b\[(\d+A|J|2m|0m)`)
