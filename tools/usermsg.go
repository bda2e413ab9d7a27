package tools

import (
	"context"
	"errors"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

// userMessager is implemented by errors that carry a text meant for the
// model, such as the sandbox's refusal of a path outside its roots. Such a
// text replaces whatever Node-style text a tool would build around the
// error, on every tool.
type userMessager interface{ UserMessage() string }

// withUserMessages wraps t so that a failure caused by an error carrying a
// user message reports exactly that message.
func withUserMessages(t loop.Tool) loop.Tool {
	if p, ok := t.(loop.ArgumentPreparer); ok {
		return &userMessageToolPrep{userMessageTool{t}, p}
	}
	return &userMessageTool{t}
}

type userMessageTool struct{ loop.Tool }

// Unwrap returns the wrapped tool, so the loop sees its markers
// (loop.StartOrdered).
func (u *userMessageTool) Unwrap() loop.Tool { return u.Tool }

func (u *userMessageTool) Execute(ctx context.Context, id string, args map[string]any, update loop.UpdateFunc) (*loop.Result, error) {
	res, err := u.Tool.Execute(ctx, id, args, update)
	if err != nil {
		var um userMessager
		if errors.As(err, &um) && ctx.Err() == nil {
			return nil, &fileError{msg: um.UserMessage(), err: err}
		}
	}
	return res, err
}

type userMessageToolPrep struct {
	userMessageTool
	p loop.ArgumentPreparer
}

func (u *userMessageToolPrep) PrepareArguments(raw any) any { return u.p.PrepareArguments(raw) }
