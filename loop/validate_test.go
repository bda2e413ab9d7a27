package loop_test

import (
	"context"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/loop/looptest"
)

// one runs a single call and returns its result.
func one(t *testing.T, l *loop.Loop, name, args string) *loop.Result {
	t.Helper()
	b := l.RunBatch(context.Background(), nil, []loop.ToolCall{call("c1", name, args)}, nil)
	if len(b.Results) != 1 {
		t.Fatalf("%d results", len(b.Results))
	}
	return b.Results[0].Result
}

func TestValidationGolden(t *testing.T) {
	edit := &looptest.Func{ToolName: "edit",
		Schema: `{"type":"object","properties":{"path":{"type":"string"},"edits":{"type":"array","items":{"type":"object","properties":{"oldText":{"type":"string"},"newText":{"type":"string"}},"required":["oldText","newText"]}}},"required":["path","edits"]}`,
		Fn:     readTool().Fn}
	strict := &looptest.Func{ToolName: "strict",
		Schema: `{"type":"object","properties":{"mode":{"enum":["a","b"]},"n":{"type":"integer","minimum":1,"maximum":9},"s":{"type":"string","minLength":2,"pattern":"^x"},"list":{"type":"array","minItems":2}},"additionalProperties":false}`,
		Fn:     readTool().Fn}
	l := newLoop(t, []loop.Tool{readTool(), bashTool(), edit, strict})
	cases := []struct{ name, tool, args, want string }{
		// Captured from pi 1.6.0.
		{"read empty", "read", `{}`, "Validation failed for tool \"read\":\n  - path: missing\n\nReceived arguments:\n{}"},
		{"bash timeout string", "bash", `{"command":"x","timeout":"abc"}`, "Validation failed for tool \"bash\":\n  - timeout: expected number, got string\n\nReceived arguments:\n{\n  \"command\": \"x\",\n  \"timeout\": \"abc\"\n}"},
		// Key order as sent, no HTML escaping, non-ASCII literal.
		{"raw order kept", "bash", `{"timeout":"abc","zeta":"<&>","command":"é"}`, "Validation failed for tool \"bash\":\n  - timeout: expected number, got string\n\nReceived arguments:\n{\n  \"timeout\": \"abc\",\n  \"zeta\": \"<&>\",\n  \"command\": \"é\"\n}"},
		// Errors in schema order, whatever the argument order.
		{"schema order", "bash", `{"timeout":true}`, "Validation failed for tool \"bash\":\n  - command: missing\n  - timeout: expected number, got boolean\n\nReceived arguments:\n{\n  \"timeout\": true\n}"},
		{"nested path", "edit", `{"path":"a","edits":[{"newText":"x"}]}`, "Validation failed for tool \"edit\":\n  - edits.0.oldText: missing\n\nReceived arguments:\n{\n  \"path\": \"a\",\n  \"edits\": [\n    {\n      \"newText\": \"x\"\n    }\n  ]\n}"},
		{"root type", "read", `"x"`, "Validation failed for tool \"read\":\n  - root: expected object, got string\n\nReceived arguments:\n\"x\""},
		{"integer got", "read", `{"path":{}}`, "Validation failed for tool \"read\":\n  - path: expected string, got object\n\nReceived arguments:\n{\n  \"path\": {}\n}"},
		{"keywords", "strict", `{"mode":"c","n":10,"s":"y","list":[1],"extra":1}`, "Validation failed for tool \"strict\":\n" +
			"  - mode: expected one of \"a\", \"b\"\n  - n: expected <= 9\n  - s: expected at least 2 characters\n  - s: expected to match ^x\n  - list: expected at least 2 items\n  - extra: unknown field\n\nReceived arguments:\n" +
			"{\n  \"mode\": \"c\",\n  \"n\": 10,\n  \"s\": \"y\",\n  \"list\": [\n    1\n  ],\n  \"extra\": 1\n}"},
		{"integer vs number", "strict", `{"n":1.5}`, "Validation failed for tool \"strict\":\n  - n: expected integer, got number\n\nReceived arguments:\n{\n  \"n\": 1.5\n}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := one(t, l, c.tool, c.args)
			if !r.IsError || resultText(r) != c.want {
				t.Errorf("got isError=%v\n%s\nwant\n%s", r.IsError, resultText(r), c.want)
			}
			if d, ok := r.Details.(map[string]any); !ok || len(d) != 0 {
				t.Errorf("details = %#v, want {}", r.Details)
			}
		})
	}
}

func TestCoercion(t *testing.T) {
	opts := &looptest.Func{ToolName: "opts",
		Schema: `{"type":"object","properties":{"flag":{"type":"boolean"},"list":{"type":"array","items":{"type":"number"}},"maybe":{"type":"string"},"nul":{"type":["string","null"]}},"required":["flag"]}`,
		Fn:     readTool().Fn}
	l := newLoop(t, []loop.Tool{readTool(), opts})
	cases := []struct{ tool, args, want string }{
		{"read", `{"path":5}`, `{"path":"5"}`},
		{"read", `{"path":"a","limit":"7"}`, `{"limit":7,"path":"a"}`},
		{"read", `{"path":"a","offset":" 2.5 "}`, `{"offset":2.5,"path":"a"}`},
		{"read", `{"path":"a","limit":null}`, `{"path":"a"}`},
		{"opts", `{"flag":"true","list":"3"}`, `{"flag":true,"list":[3]}`},
		{"opts", `{"flag":"false","list":["1","2"],"maybe":null,"nul":null}`, `{"flag":false,"list":[1,2],"nul":null}`},
	}
	for _, c := range cases {
		r := one(t, l, c.tool, c.args)
		if r.IsError || resultText(r) != c.want {
			t.Errorf("%s %s: got %v %q, want %q", c.tool, c.args, r.IsError, resultText(r), c.want)
		}
	}
	// Required null is not removed: it fails as null.
	r := one(t, l, "opts", `{"flag":null}`)
	want := "Validation failed for tool \"opts\":\n  - flag: expected boolean, got null\n\nReceived arguments:\n{\n  \"flag\": null\n}"
	if resultText(r) != want {
		t.Errorf("got %q, want %q", resultText(r), want)
	}
	// "0x10" and "1e" are not numbers.
	r = one(t, l, "read", `{"path":"a","limit":"0x10"}`)
	if !r.IsError {
		t.Errorf("0x10 accepted as a number: %q", resultText(r))
	}
}

// preparer rewrites {"file": …} into {"path": …}, like edit's legacy forms.
type preparer struct{ *looptest.Func }

func (p preparer) PrepareArguments(raw any) any {
	m, ok := raw.(map[string]any)
	if !ok {
		return raw
	}
	if f, ok := m["file"]; ok {
		delete(m, "file")
		m["path"] = f
	}
	return m
}

func TestPrepareArguments(t *testing.T) {
	l := newLoop(t, []loop.Tool{preparer{readTool()}})
	if r := one(t, l, "read", `{"file":"x"}`); r.IsError || resultText(r) != `{"path":"x"}` {
		t.Errorf("prepared call: %v %q", r.IsError, resultText(r))
	}
	// The failure quotes the prepared arguments.
	r := one(t, l, "read", `{"file":1.5,"limit":"z"}`)
	want := "Validation failed for tool \"read\":\n  - limit: expected number, got string\n\nReceived arguments:\n{\n  \"limit\": \"z\",\n  \"path\": 1.5\n}"
	if resultText(r) != want {
		t.Errorf("got %q\nwant %q", resultText(r), want)
	}
}

func FuzzCoercion(f *testing.F) {
	for _, s := range []string{`{}`, `{"path":5}`, `{"path":"a","limit":"7"}`, `{"path":null,"offset":[1]}`, `[1]`, `"x"`} {
		f.Add(s)
	}
	l, err := loop.New([]loop.Tool{readTool()})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args string) {
		b := l.RunBatch(context.Background(), nil, []loop.ToolCall{call("c", "read", args)}, nil)
		if len(b.Results) != 1 || b.Results[0].Result.Content == nil {
			t.Fatalf("bad batch for %q", args)
		}
	})
}
