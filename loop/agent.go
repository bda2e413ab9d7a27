package loop

import (
	"context"
	"sync"
)

// Request is what a provider answers: the transcript so far and the tools
// the model may call.
type Request struct {
	Messages []Message
	Tools    []Tool
}

// StreamEvent is one step of a streaming assistant message (pi's
// AssistantMessageEvent): "start", "text_end", "toolcall_end", "done", …
type StreamEvent struct {
	Type         string `json:"type"`
	ContentIndex *int   `json:"contentIndex,omitempty"`
	Delta        string `json:"delta,omitempty"`
	// Partial is the message so far; the loop emits it as message_update's
	// message. Providers must not change it after emitting.
	Partial *AssistantMessage `json:"-"`
}

// Provider produces the model's replies.
type Provider interface {
	// Stream answers req. It may call emit with the message's progress,
	// "start" first; it returns the final message. An error means no
	// usable reply (the loop turns it into a message with stopReason
	// "error", or "aborted" when ctx was cancelled). ctx carries the abort.
	Stream(ctx context.Context, req *Request, emit func(*StreamEvent)) (*AssistantMessage, error)
}

// TurnAction is a FinishTurn decision (pi 1.6 finishTurn).
type TurnAction int

const (
	// TurnDefault lets the loop decide.
	TurnDefault TurnAction = iota
	// TurnStop ends the run after this turn.
	TurnStop
	// TurnContinue runs one more turn when the run would otherwise stop.
	TurnContinue
)

// RunOptions configures one agent run.
type RunOptions struct {
	// Context is the transcript before this run; it is not part of the
	// returned messages.
	Context []Message
	// Prompts open the run; they are emitted and returned.
	Prompts []Message
	// Steering is polled before the first turn and after every turn; its
	// messages are injected before the next request (never skipping tool
	// calls). FollowUp is polled only when the run would otherwise stop.
	// Either may be nil. See [Queue].
	Steering func() []Message
	FollowUp func() []Message
	// FinishTurn, if set, is called before every turn_end.
	FinishTurn func(ctx context.Context, msg *AssistantMessage, results []*ToolResultMessage) TurnAction
}

// Run is pi 1.6's agent loop: agent_start, turns of
// request → tool batch → turn_end, steering and follow-up messages, and
// exactly one agent_end. It returns the messages the run produced.
func (l *Loop) Run(ctx context.Context, p Provider, opts RunOptions, emit EmitFunc) []Message {
	em := &emitter{emit: emit}
	transcript := append([]Message{}, opts.Context...)
	var produced []Message
	add := func(m Message) {
		transcript = append(transcript, m)
		produced = append(produced, m)
	}
	poll := func(f func() []Message) []Message {
		if f == nil {
			return nil
		}
		return f()
	}

	em.send(AgentStart{})
	em.send(TurnStart{})
	for _, m := range opts.Prompts {
		em.send(MessageStart{m})
		em.send(MessageEnd{m})
		add(m)
	}
	pending := poll(opts.Steering)
	first := true
	action := TurnDefault
	for {
		more := true
		for more || len(pending) > 0 {
			if !first {
				em.send(TurnStart{})
			}
			first = false
			for _, m := range pending {
				em.send(MessageStart{m})
				em.send(MessageEnd{m})
				add(m)
			}
			pending = nil

			msg := l.stream(ctx, p, transcript, em)
			add(msg)
			if msg.StopReason == StopError || msg.StopReason == StopAborted {
				if opts.FinishTurn != nil {
					opts.FinishTurn(ctx, msg, nil)
				}
				em.send(TurnEnd{Message: msg})
				em.send(AgentEnd{Messages: produced})
				return produced
			}
			calls := msg.ToolCalls()
			var batch *Batch
			switch {
			case len(calls) == 0:
				batch = &Batch{}
			case msg.StopReason == StopLength:
				batch = l.RejectBatch(calls, em.send)
			default:
				batch = l.RunBatch(ctx, msg, calls, em.send)
			}
			for _, r := range batch.Results {
				add(r)
			}
			action = TurnDefault
			if opts.FinishTurn != nil {
				action = opts.FinishTurn(ctx, msg, batch.Results)
			}
			em.send(TurnEnd{Message: msg, ToolResults: batch.Results})
			if action == TurnStop {
				em.send(AgentEnd{Messages: produced})
				return produced
			}
			more = len(calls) > 0 && !batch.Terminate
			pending = poll(opts.Steering)
		}
		if f := poll(opts.FollowUp); len(f) > 0 {
			pending = f
			continue
		}
		if action == TurnContinue {
			action = TurnDefault
			continue // one more request with the current transcript
		}
		break
	}
	em.send(AgentEnd{Messages: produced})
	return produced
}

// stream asks the provider for one reply and emits message_start, updates
// and message_end.
func (l *Loop) stream(ctx context.Context, p Provider, transcript []Message, em *emitter) *AssistantMessage {
	started := false
	onEvent := func(ev *StreamEvent) {
		if ev == nil || ev.Partial == nil {
			return
		}
		if !started {
			started = true
			em.send(MessageStart{ev.Partial})
			if ev.Type == "start" {
				return
			}
		}
		em.send(MessageUpdate{Message: ev.Partial, AssistantMessageEvent: ev})
	}
	msg, err := p.Stream(ctx, &Request{Messages: transcript, Tools: l.tools}, onEvent)
	if err != nil || msg == nil {
		reason := StopError
		if ctx.Err() != nil {
			reason = StopAborted
		}
		text := "provider returned no message"
		if err != nil {
			text = err.Error()
		}
		msg = &AssistantMessage{Content: []Part{{Type: "text"}}, StopReason: reason, ErrorMessage: text}
	}
	if !started {
		em.send(MessageStart{msg})
	}
	em.send(MessageEnd{msg})
	return msg
}

// QueueMode says how much a Queue drain returns.
type QueueMode int

const (
	// OneAtATime drains only the oldest message (pi's default).
	OneAtATime QueueMode = iota
	// All drains everything queued.
	All
)

// Queue is a steering or follow-up queue (pi's Agent.steer / followUp).
// Its Drain method fits RunOptions.Steering and RunOptions.FollowUp.
type Queue struct {
	Mode QueueMode

	mu   sync.Mutex
	msgs []Message
}

// Push enqueues messages; safe to call while a run is going.
func (q *Queue) Push(m ...Message) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, m...)
}

// Drain returns the oldest message (OneAtATime) or all of them (All).
func (q *Queue) Drain() []Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.msgs) == 0 {
		return nil
	}
	n := 1
	if q.Mode == All {
		n = len(q.msgs)
	}
	out := append([]Message{}, q.msgs[:n]...)
	q.msgs = q.msgs[n:]
	return out
}
