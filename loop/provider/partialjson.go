package provider

import (
	"encoding/json"
	"slices"
)

// PartialJSON turns the beginning of a JSON document (tool-call arguments
// still streaming) into a valid document holding what is complete so far,
// like pi's parseStreamingJson: open strings, arrays and objects are
// closed, a dangling key or unfinished literal is dropped. Anything it
// cannot repair gives {}.
func PartialJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage(`{}`)
	}
	if json.Valid(b) {
		return json.RawMessage(slices.Clone(b))
	}
	type cut struct {
		n      int    // bytes kept
		closer string // what closes the containers open there
	}
	var (
		stack    []byte // open containers' closers
		inString bool
		escaped  bool
		cuts     []cut
	)
	closers := func() string {
		s := make([]byte, len(stack))
		for i := range stack {
			s[i] = stack[len(stack)-1-i]
		}
		return string(s)
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				cuts = append(cuts, cut{i + 1, closers()})
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{':
			stack = append(stack, '}')
			cuts = append(cuts, cut{i + 1, closers()})
		case '[':
			stack = append(stack, ']')
			cuts = append(cuts, cut{i + 1, closers()})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			cuts = append(cuts, cut{i + 1, closers()})
		case ',', ':', ' ', '\t', '\n', '\r':
		default: // numbers and literals: a cut after each byte
			cuts = append(cuts, cut{i + 1, closers()})
		}
	}
	// The whole text first, its open string closed.
	if inString {
		t := b
		if escaped {
			t = t[:len(t)-1]
		}
		if s := string(t) + `"` + closers(); json.Valid([]byte(s)) {
			return json.RawMessage(s)
		}
	}
	for k := len(cuts) - 1; k >= 0; k-- {
		s := string(b[:cuts[k].n]) + cuts[k].closer
		if json.Valid([]byte(s)) {
			return json.RawMessage(s)
		}
	}
	return json.RawMessage(`{}`)
}
