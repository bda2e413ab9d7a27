package loop

import (
	"encoding/json"
	"fmt"
)

// StopReason says why an assistant message ended.
type StopReason string

// pi's stop reasons.
const (
	StopToolUse StopReason = "toolUse"
	StopStop    StopReason = "stop"
	StopLength  StopReason = "length"
	StopError   StopReason = "error"
	StopAborted StopReason = "aborted"
)

// Message is one transcript entry: *UserMessage, *AssistantMessage or
// *ToolResultMessage.
type Message interface {
	Role() string
}

// UserMessage is a prompt, a steering or a follow-up message.
type UserMessage struct {
	Content []Content
}

// Role implements Message.
func (*UserMessage) Role() string { return "user" }

// MarshalJSON writes {"role":"user","content":[…]}.
func (m *UserMessage) MarshalJSON() ([]byte, error) {
	return MarshalNoEscape(struct {
		Role    string    `json:"role"`
		Content []Content `json:"content"`
	}{"user", nonNil(m.Content)})
}

// UserText returns a user message with one text block.
func UserText(s string) *UserMessage { return &UserMessage{Content: []Content{Text(s)}} }

// Part is one block of an assistant message: "text", "thinking" or
// "toolCall".
type Part struct {
	Type     string // "text", "thinking" or "toolCall"
	Text     string // for "text"
	Thinking string // for "thinking"
	// For "thinking": the provider's signature, sent back with the block on
	// later requests (Anthropic requires it); Redacted marks a block whose
	// text the provider withheld (Signature then holds its opaque data).
	Signature string
	Redacted  bool
	// For "toolCall": the call's id, the tool's name and the raw arguments
	// exactly as the model sent them (nil means {}).
	ID        string
	Name      string
	Arguments json.RawMessage
}

// MarshalJSON writes pi's block shapes.
func (p Part) MarshalJSON() ([]byte, error) {
	switch p.Type {
	case "toolCall":
		return MarshalNoEscape(struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}{p.Type, p.ID, p.Name, rawArgs(p.Arguments)})
	case "thinking":
		return MarshalNoEscape(struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"thinkingSignature,omitempty"`
			Redacted  bool   `json:"redacted,omitempty"`
		}{p.Type, p.Thinking, p.Signature, p.Redacted})
	}
	return MarshalNoEscape(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{p.Type, p.Text})
}

// UnmarshalJSON reads any of the shapes.
func (p *Part) UnmarshalJSON(b []byte) error {
	var v struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"thinkingSignature"`
		Redacted  bool            `json:"redacted"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v.Type {
	case "text", "thinking", "toolCall":
	default:
		return fmt.Errorf("loop: unknown content block type %q", v.Type)
	}
	*p = Part{Type: v.Type, Text: v.Text, Thinking: v.Thinking, Signature: v.Signature, Redacted: v.Redacted,
		ID: v.ID, Name: v.Name, Arguments: v.Arguments}
	return nil
}

// AssistantMessage is one reply of the model.
type AssistantMessage struct {
	Content      []Part
	StopReason   StopReason
	ErrorMessage string // for StopError and StopAborted
	// Usage is the tokens the reply cost, when the provider reports them
	// (nil for scripted turns without usage).
	Usage *Usage
}

// Role implements Message.
func (*AssistantMessage) Role() string { return "assistant" }

// ToolCalls returns the message's tool calls in content order.
func (m *AssistantMessage) ToolCalls() []ToolCall {
	var calls []ToolCall
	for _, p := range m.Content {
		if p.Type == "toolCall" {
			calls = append(calls, ToolCall{ID: p.ID, Name: p.Name, Arguments: p.Arguments})
		}
	}
	return calls
}

type assistantJSON struct {
	Role         string     `json:"role"`
	Content      []Part     `json:"content"`
	StopReason   StopReason `json:"stopReason"`
	ErrorMessage string     `json:"errorMessage,omitempty"`
	Usage        *Usage     `json:"usage,omitempty"`
}

// MarshalJSON writes {"role":"assistant","content":[…],"stopReason":…}.
func (m *AssistantMessage) MarshalJSON() ([]byte, error) {
	return MarshalNoEscape(assistantJSON{"assistant", nonNil(m.Content), m.StopReason, m.ErrorMessage, m.Usage})
}

// UnmarshalJSON reads an assistant message; "role" is optional.
func (m *AssistantMessage) UnmarshalJSON(b []byte) error {
	var v assistantJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.Role != "" && v.Role != "assistant" {
		return fmt.Errorf("loop: assistant message with role %q", v.Role)
	}
	*m = AssistantMessage{Content: v.Content, StopReason: v.StopReason, ErrorMessage: v.ErrorMessage, Usage: v.Usage}
	return nil
}

// ToolCall is one call of a batch: {"id","name","arguments"}.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResultMessage is the transcript entry for one finished call.
type ToolResultMessage struct {
	ToolCallID string
	ToolName   string
	// Result is the finalized result (Content never nil). Its Err and
	// Terminate fields are not part of the message's JSON.
	Result *Result
	// Duration is the execution time in milliseconds; nil for calls that
	// never executed (immediate results), as in pi 1.6.
	DurationMs *int64
}

// Role implements Message.
func (*ToolResultMessage) Role() string { return "toolResult" }

// IsError reports whether the result is an error result.
func (m *ToolResultMessage) IsError() bool { return m.Result.IsError }

type toolResultJSON struct {
	Role       string    `json:"role"`
	ToolCallID string    `json:"toolCallId"`
	ToolName   string    `json:"toolName"`
	Content    []Content `json:"content"`
	Details    any       `json:"details,omitempty"`
	IsError    bool      `json:"isError"`
	DurationMs *int64    `json:"durationMs,omitempty"`
}

// MarshalJSON writes {"role":"toolResult","toolCallId","toolName","content",
// "details"?,"isError","durationMs"?}.
func (m *ToolResultMessage) MarshalJSON() ([]byte, error) { return m.marshal(true) }

func (m *ToolResultMessage) marshal(withDuration bool) ([]byte, error) {
	v := toolResultJSON{
		Role: "toolResult", ToolCallID: m.ToolCallID, ToolName: m.ToolName,
		Content: nonNil(m.Result.Content), Details: m.Result.Details, IsError: m.Result.IsError,
	}
	if withDuration {
		v.DurationMs = m.DurationMs
	}
	return MarshalNoEscape(v)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func rawOrEmpty(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage("{}")
	}
	return r
}

// rawArgs is rawOrEmpty for output: arguments that are not valid JSON (a
// truncated reply built in Go) are written as a JSON string rather than
// breaking the event stream.
func rawArgs(r json.RawMessage) json.RawMessage {
	r = rawOrEmpty(r)
	if !json.Valid(r) {
		b, _ := MarshalNoEscape(string(r))
		return b
	}
	return r
}
