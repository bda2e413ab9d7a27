package shim

import (
	"fmt"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
)

// rootSet is a registered set of confinement roots and the file system
// confined to them.
type rootSet struct {
	roots []ops.Root
	fs    ops.FS
	close func()
}

func openRootSet(b *native.Backend, roots []ops.Root) (*rootSet, error) {
	return nil, fmt.Errorf("shim: roots: %w", ops.ErrUnsupported)
}
