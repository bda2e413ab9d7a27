package tools

// Stubs for the constructors All needs; each is replaced by its real tool.
// Delete a stub when its tool lands.

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

type stub string

func (s stub) Name() string                { return string(s) }
func (s stub) Label() string               { return string(s) }
func (s stub) Description() string         { return string(s) }
func (s stub) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (s stub) Mode() loop.Mode             { return loop.Parallel }
func (s stub) Execute(context.Context, string, map[string]any, loop.UpdateFunc) (*loop.Result, error) {
	return nil, errors.New("tools: " + string(s) + " is not implemented yet")
}
