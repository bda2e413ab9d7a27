package loop

import "encoding/json"

// Event is one loop event. Its JSON is one object with a "type" key and
// pi's field names, in pi's order.
type Event interface {
	Type() string
}

// EmitFunc receives events. The loop never calls it concurrently, and calls
// it in event order.
type EmitFunc func(Event)

// AgentStart opens a run.
type AgentStart struct{}

// AgentEnd closes a run with the messages it produced.
type AgentEnd struct{ Messages []Message }

// TurnStart opens a turn.
type TurnStart struct{}

// TurnEnd closes a turn: the assistant message and its tool results.
type TurnEnd struct {
	Message     *AssistantMessage
	ToolResults []*ToolResultMessage
}

// MessageStart announces a message.
type MessageStart struct{ Message Message }

// MessageUpdate carries a streaming assistant message's new state.
type MessageUpdate struct {
	Message *AssistantMessage
	// AssistantMessageEvent is the provider's event behind the update.
	AssistantMessageEvent *StreamEvent
}

// MessageEnd finishes a message.
type MessageEnd struct{ Message Message }

// ToolExecutionStart is emitted first for every call, with the raw
// arguments as the model sent them.
type ToolExecutionStart struct {
	ToolCallID string
	ToolName   string
	Args       json.RawMessage
}

// ToolExecutionUpdate carries a running tool's partial result.
type ToolExecutionUpdate struct {
	ToolCallID    string
	ToolName      string
	Args          json.RawMessage
	PartialResult *Result
}

// ToolExecutionEnd carries a call's finalized result. DurationMs is nil for
// calls that never executed.
type ToolExecutionEnd struct {
	ToolCallID string
	ToolName   string
	Result     *Result
	IsError    bool
	DurationMs *int64
}

// Type implements Event.
func (AgentStart) Type() string { return "agent_start" }

// Type implements Event.
func (AgentEnd) Type() string { return "agent_end" }

// Type implements Event.
func (TurnStart) Type() string { return "turn_start" }

// Type implements Event.
func (TurnEnd) Type() string { return "turn_end" }

// Type implements Event.
func (MessageStart) Type() string { return "message_start" }

// Type implements Event.
func (MessageUpdate) Type() string { return "message_update" }

// Type implements Event.
func (MessageEnd) Type() string { return "message_end" }

// Type implements Event.
func (ToolExecutionStart) Type() string { return "tool_execution_start" }

// Type implements Event.
func (ToolExecutionUpdate) Type() string { return "tool_execution_update" }

// Type implements Event.
func (ToolExecutionEnd) Type() string { return "tool_execution_end" }

// MarshalJSON writes {"type":"agent_start"}.
func (e AgentStart) MarshalJSON() ([]byte, error) { return typeOnly(e) }

// MarshalJSON writes {"type":"turn_start"}.
func (e TurnStart) MarshalJSON() ([]byte, error) { return typeOnly(e) }

func typeOnly(e Event) ([]byte, error) {
	return MarshalNoEscape(struct {
		Type string `json:"type"`
	}{e.Type()})
}

// MarshalJSON writes {"type":"agent_end","messages":[…]}.
func (e AgentEnd) MarshalJSON() ([]byte, error) {
	return MarshalNoEscape(struct {
		Type     string    `json:"type"`
		Messages []Message `json:"messages"`
	}{e.Type(), nonNil(e.Messages)})
}

// MarshalJSON writes {"type":"turn_end","message":…,"toolResults":[…]}.
func (e TurnEnd) MarshalJSON() ([]byte, error) {
	return MarshalNoEscape(struct {
		Type        string               `json:"type"`
		Message     *AssistantMessage    `json:"message"`
		ToolResults []*ToolResultMessage `json:"toolResults"`
	}{e.Type(), e.Message, nonNil(e.ToolResults)})
}

// MarshalJSON writes {"type":"message_start","message":…}. A tool-result
// message is written without durationMs here, as pi writes it; the
// duration appears on message_end.
func (e MessageStart) MarshalJSON() ([]byte, error) {
	msg := any(e.Message)
	if tr, ok := e.Message.(*ToolResultMessage); ok {
		b, err := tr.marshal(false)
		if err != nil {
			return nil, err
		}
		msg = json.RawMessage(b)
	}
	return MarshalNoEscape(struct {
		Type    string `json:"type"`
		Message any    `json:"message"`
	}{e.Type(), msg})
}

// MarshalJSON writes {"type":"message_update","message":…,
// "assistantMessageEvent":…}.
func (e MessageUpdate) MarshalJSON() ([]byte, error) {
	return MarshalNoEscape(struct {
		Type                  string            `json:"type"`
		Message               *AssistantMessage `json:"message"`
		AssistantMessageEvent *StreamEvent      `json:"assistantMessageEvent,omitempty"`
	}{e.Type(), e.Message, e.AssistantMessageEvent})
}

// MarshalJSON writes {"type":"message_end","message":…}.
func (e MessageEnd) MarshalJSON() ([]byte, error) {
	return MarshalNoEscape(struct {
		Type    string  `json:"type"`
		Message Message `json:"message"`
	}{e.Type(), e.Message})
}

// MarshalJSON writes {"type","toolCallId","toolName","args"}.
func (e ToolExecutionStart) MarshalJSON() ([]byte, error) {
	return MarshalNoEscape(struct {
		Type       string          `json:"type"`
		ToolCallID string          `json:"toolCallId"`
		ToolName   string          `json:"toolName"`
		Args       json.RawMessage `json:"args"`
	}{e.Type(), e.ToolCallID, e.ToolName, rawArgs(e.Args)})
}

// MarshalJSON writes {"type","toolCallId","toolName","args","partialResult"}.
func (e ToolExecutionUpdate) MarshalJSON() ([]byte, error) {
	return MarshalNoEscape(struct {
		Type          string          `json:"type"`
		ToolCallID    string          `json:"toolCallId"`
		ToolName      string          `json:"toolName"`
		Args          json.RawMessage `json:"args"`
		PartialResult *partialJSON    `json:"partialResult"`
	}{e.Type(), e.ToolCallID, e.ToolName, rawArgs(e.Args), newPartialJSON(e.PartialResult)})
}

// partialJSON is a partial result as pi's onUpdate carries it: content and
// details only (a running tool has no isError or terminate yet).
type partialJSON struct {
	Content []Content `json:"content"`
	Details any       `json:"details,omitempty"`
}

func newPartialJSON(r *Result) *partialJSON {
	if r == nil {
		return nil
	}
	c := r.Content
	if c == nil {
		c = []Content{}
	}
	return &partialJSON{Content: c, Details: r.Details}
}

// MarshalJSON writes {"type","toolCallId","toolName","result","isError",
// "durationMs"?}.
func (e ToolExecutionEnd) MarshalJSON() ([]byte, error) {
	return MarshalNoEscape(struct {
		Type       string  `json:"type"`
		ToolCallID string  `json:"toolCallId"`
		ToolName   string  `json:"toolName"`
		Result     *Result `json:"result"`
		IsError    bool    `json:"isError"`
		DurationMs *int64  `json:"durationMs,omitempty"`
	}{e.Type(), e.ToolCallID, e.ToolName, e.Result, e.IsError, e.DurationMs})
}
