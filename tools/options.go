package tools

import (
	"context"
	"io"
)

// Options are a policy's settings for the tools (see AllWith). The zero
// value changes nothing.
type Options struct {
	// Env holds "KEY=VALUE" entries every bash command gets before the
	// tool's own non-interactive ones (which override them).
	Env []string

	// BaseEnv, when not nil, replaces the backend's base environment of
	// bash commands (ops.Cmd.BaseEnv; an empty list is an empty base).
	BaseEnv []string

	// Output, when set, may filter a bash command's output before the tool
	// sees it (its tail window, the saved full output, the partial
	// results): it returns the writer the command's output goes to, in
	// front of w, or nil to leave this call's output as it is. Close is
	// called once the command ended, to write what the filter held back;
	// its error fails the call. A filtered call saves its output from the
	// tool, never in the target (the file holds what the tool saw).
	Output func(ctx context.Context, w io.Writer) io.WriteCloser
}

// filter returns the call's output filter, nil for none.
func (o Options) filter(ctx context.Context, w io.Writer) io.WriteCloser {
	if o.Output == nil {
		return nil
	}
	return o.Output(ctx, w)
}
