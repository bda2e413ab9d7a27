package loop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// Script is a Provider that replays assistant turns, one JSON object per
// line:
//
//	{"content":[{"type":"text","text":"…"},{"type":"toolCall","id":"c1","name":"read","arguments":{…}}],"stopReason":"toolUse"}
//
// Each request gets the next turn, whatever the transcript says. When the
// turns run out the session ends cleanly: the reply is an empty message with
// stopReason "stop". No network is involved.
type Script struct {
	mu    sync.Mutex
	turns []*AssistantMessage
	next  int
}

// ReadScript parses a script. Blank lines are skipped. A missing stopReason
// is "toolUse" when the turn calls tools, else "stop".
func ReadScript(r io.Reader) (*Script, error) {
	s := &Script{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		m := &AssistantMessage{}
		if err := json.Unmarshal(b, m); err != nil {
			return nil, fmt.Errorf("loop: script line %d: %w", line, err)
		}
		switch m.StopReason {
		case "":
			m.StopReason = StopStop
			if len(m.ToolCalls()) > 0 {
				m.StopReason = StopToolUse
			}
		case StopToolUse, StopStop, StopLength, StopError, StopAborted:
		default:
			return nil, fmt.Errorf("loop: script line %d: unknown stopReason %q", line, m.StopReason)
		}
		for i, p := range m.Content {
			if p.Type == "toolCall" && p.Name == "" {
				return nil, fmt.Errorf("loop: script line %d: content %d: toolCall without a name", line, i)
			}
		}
		s.turns = append(s.turns, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("loop: script: %w", err)
	}
	return s, nil
}

// Len returns the number of turns in the script.
func (s *Script) Len() int { return len(s.turns) }

// Stream implements Provider: "start", one "<kind>_end" per content block,
// then the message.
func (s *Script) Stream(ctx context.Context, req *Request, emit func(*StreamEvent)) (*AssistantMessage, error) {
	if ctx.Err() != nil {
		return &AssistantMessage{Content: []Part{}, StopReason: StopAborted, ErrorMessage: "Request was aborted"}, nil
	}
	s.mu.Lock()
	var m *AssistantMessage
	if s.next < len(s.turns) {
		m = s.turns[s.next]
		s.next++
	}
	s.mu.Unlock()
	if m == nil {
		m = &AssistantMessage{Content: []Part{}, StopReason: StopStop}
	}
	emit(&StreamEvent{Type: "start", Partial: &AssistantMessage{Content: []Part{}, StopReason: m.StopReason}})
	for i, p := range m.Content {
		kind := map[string]string{"text": "text_end", "thinking": "thinking_end", "toolCall": "toolcall_end"}[p.Type]
		idx := i
		emit(&StreamEvent{Type: kind, ContentIndex: &idx, Partial: &AssistantMessage{Content: m.Content[: i+1 : i+1], StopReason: m.StopReason}})
	}
	return m, nil
}
