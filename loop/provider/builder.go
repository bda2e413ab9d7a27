package provider

import (
	"encoding/json"
	"slices"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

// Builder assembles one streamed assistant message and emits pi's
// AssistantMessageEvents for it: "start", then "<kind>_start",
// "<kind>_delta"… and "<kind>_end" per content block (kind text, thinking
// or toolcall). Every event carries a snapshot of the message so far, which
// the loop emits as message_update. A Builder is used by one goroutine.
type Builder struct {
	emit    func(*loop.StreamEvent)
	msg     loop.AssistantMessage
	args    map[int]*[]byte // streamed arguments of open tool calls, by index
	started bool
}

// NewBuilder returns a builder that reports to emit (nil: nothing is
// reported).
func NewBuilder(emit func(*loop.StreamEvent)) *Builder {
	if emit == nil {
		emit = func(*loop.StreamEvent) {}
	}
	return &Builder{emit: emit, msg: loop.AssistantMessage{Content: []loop.Part{}}, args: map[int]*[]byte{}}
}

// Start emits "start" (once).
func (b *Builder) Start() {
	if b.started {
		return
	}
	b.started = true
	b.send("start", -1, "")
}

// Message is the message built so far; the caller sets its stop reason and
// usage before returning it. Arguments of tool calls still open are
// finished as they stand.
func (b *Builder) Message() *loop.AssistantMessage {
	for i := range b.args {
		b.finishArgs(i)
	}
	m := b.msg
	m.Content = slices.Clone(b.msg.Content)
	return &m
}

// SetUsage records the usage so far (shown on later snapshots).
func (b *Builder) SetUsage(u *loop.Usage) { b.msg.Usage = u }

// SetStopReason records the stop reason so far.
func (b *Builder) SetStopReason(r loop.StopReason) { b.msg.StopReason = r }

// Len is the number of content blocks.
func (b *Builder) Len() int { return len(b.msg.Content) }

// Open starts a block of type "text", "thinking" or "toolCall" (id and name
// for tool calls) and returns its index.
func (b *Builder) Open(p loop.Part) int {
	b.Start()
	i := len(b.msg.Content)
	b.msg.Content = append(b.msg.Content, p)
	if p.Type == "toolCall" {
		buf := []byte{}
		if len(p.Arguments) > 0 {
			buf = append(buf, p.Arguments...)
		}
		b.args[i] = &buf
		b.msg.Content[i].Arguments = PartialJSON(buf)
	}
	b.send(kind(p.Type)+"_start", i, "")
	return i
}

// Delta appends streamed text to block i: text, thinking, or a tool call's
// raw argument JSON.
func (b *Builder) Delta(i int, s string) {
	if i < 0 || i >= len(b.msg.Content) || s == "" {
		return
	}
	p := &b.msg.Content[i]
	switch p.Type {
	case "text":
		p.Text += s
	case "thinking":
		p.Thinking += s
	case "toolCall":
		buf := b.args[i]
		if buf == nil {
			return // already ended
		}
		*buf = append(*buf, s...)
		p.Arguments = PartialJSON(*buf)
	}
	b.send(kind(p.Type)+"_delta", i, s)
}

// Signature appends to thinking block i's signature (no event: pi emits
// none for it).
func (b *Builder) Signature(i int, s string) {
	if i >= 0 && i < len(b.msg.Content) {
		b.msg.Content[i].Signature += s
	}
}

// Close ends block i and emits "<kind>_end". A tool call's arguments become
// the raw JSON as streamed ({} when nothing came).
func (b *Builder) Close(i int) {
	if i < 0 || i >= len(b.msg.Content) {
		return
	}
	b.finishArgs(i)
	b.send(kind(b.msg.Content[i].Type)+"_end", i, "")
}

// SetToolCall fills in a tool call's id and name when they arrive after the
// block opened (OpenAI-compatible servers may send them late).
func (b *Builder) SetToolCall(i int, id, name string) {
	if i < 0 || i >= len(b.msg.Content) {
		return
	}
	if id != "" {
		b.msg.Content[i].ID = id
	}
	if name != "" {
		b.msg.Content[i].Name = name
	}
}

func (b *Builder) finishArgs(i int) {
	buf, ok := b.args[i]
	if !ok {
		return
	}
	delete(b.args, i)
	raw := json.RawMessage(`{}`)
	if len(*buf) > 0 {
		raw = json.RawMessage(slices.Clone(*buf))
	}
	b.msg.Content[i].Arguments = raw
}

func (b *Builder) send(typ string, idx int, delta string) {
	snap := b.msg
	snap.Content = slices.Clone(b.msg.Content)
	ev := &loop.StreamEvent{Type: typ, Delta: delta, Partial: &snap}
	if idx >= 0 {
		ev.ContentIndex = &idx
	}
	b.emit(ev)
}

func kind(partType string) string {
	if partType == "toolCall" {
		return "toolcall"
	}
	return partType
}
