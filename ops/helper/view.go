package helper

import "github.com/pi-sandbox/pi-sandbox/ops"

// Owned returns v, a view made by (*Client).Confine, as a backend whose Info
// and Close are those of the backend that owns the helper (a docker
// container, an ssh connection, a local spill directory), keeping every
// capability of the view.
func Owned(v ops.Backend, info func() ops.Info, closeFn func() error) ops.Backend {
	return &owned{Client: v.(*Client), info: info, close: closeFn}
}

type owned struct {
	*Client
	info  func() ops.Info
	close func() error
}

func (o *owned) Info() ops.Info { return o.info() }
func (o *owned) Close() error   { return o.close() }
