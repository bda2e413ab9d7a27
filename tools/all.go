package tools

import (
	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// All returns the seven tools bound to backend b, in pi's order: read, bash,
// edit, write, grep, find, ls. edit and write share one file mutation queue,
// and what read, write and edit last saw in a file spares the next edit its
// read (contentMemo). It is AllWith with zero Options.
func All(b ops.Backend) []loop.Tool { return AllWith(b, Options{}) }

// AllWith is All with a policy's options for the bash tool's commands. The
// file tools call b itself: its optional capabilities (ops.CheckedOpenFS,
// ops.ListFS, ops.SpillRunner, ...) are what they see.
func AllWith(b ops.Backend, opts Options) []loop.Tool {
	info := b.Info()
	q := NewMutationQueue(b)
	ts := []loop.Tool{
		&readTool{fsys: b, info: info, memo: q.memo},
		newBash(b, b, info, opts),
		NewEdit(b, info, q),
		NewWrite(b, info, q),
		NewGrep(b, info),
		NewFind(b, info),
		NewLs(b, info),
	}
	for i, t := range ts {
		ts[i] = withUserMessages(t, b, info)
	}
	return ts
}
