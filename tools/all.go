package tools

import (
	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// All returns the seven tools bound to backend b, in pi's order: read, bash,
// edit, write, grep, find, ls. edit and write share one file mutation queue,
// and what read, write and edit last saw in a file spares the next edit its
// read (contentMemo).
func All(b ops.Backend) []loop.Tool {
	info := b.Info()
	q := NewMutationQueue(b)
	ts := []loop.Tool{
		&readTool{fsys: b, info: info, memo: q.memo},
		NewBash(b, b, info),
		NewEdit(b, info, q),
		NewWrite(b, info, q),
		NewGrep(b, info),
		NewFind(b, info),
		NewLs(b, info),
	}
	for i, t := range ts {
		ts[i] = withUserMessages(t)
	}
	return ts
}
