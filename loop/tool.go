package loop

import (
	"context"
	"encoding/json"
)

// Mode is a tool's execution mode.
type Mode int

const (
	// Parallel tools of one batch run concurrently (the default).
	Parallel Mode = iota
	// Sequential makes the whole batch it appears in run one call at a time.
	Sequential
)

// UpdateFunc receives a tool's partial results while it runs (bash's
// streaming output). It must not retain the result after it returns.
type UpdateFunc func(partial *Result)

// Tool is what the loop knows of a tool.
type Tool interface {
	Name() string
	Label() string
	Description() string
	// Parameters is the JSON Schema of the arguments, as sent to the model.
	Parameters() json.RawMessage
	Mode() Mode
	// Execute runs the tool with validated, coerced arguments (a JSON object
	// decoded into map[string]any; see DecodeArgs). A returned error becomes
	// an error result whose text is err.Error(); a result with IsError set
	// is an error result too. ctx carries the abort (context.Cause tells
	// why). update may be nil.
	Execute(ctx context.Context, callID string, args map[string]any, update UpdateFunc) (*Result, error)
}

// ArgumentPreparer is implemented by tools that rewrite raw arguments before
// validation (pi's prepareArguments: edit's legacy forms). The input is the
// decoded JSON value as the model sent it; the result replaces it.
type ArgumentPreparer interface {
	PrepareArguments(raw any) any
}

// DecodeArgs converts validated arguments into a typed struct through JSON.
func DecodeArgs(args map[string]any, v any) error {
	b, err := json.Marshal(args)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
