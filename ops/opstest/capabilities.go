package opstest

import (
	"reflect"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Capabilities lists the optional interfaces of package ops that a backend
// may implement beyond ops.Backend. A wrapper of a backend (a dispatcher,
// a confined view) keeps each one its backend has, or the fast path it
// stands for is lost without an error; tests check wrappers against this
// list, and the list against package ops.
var Capabilities = []reflect.Type{
	reflect.TypeFor[ops.GrepFS](),
	reflect.TypeFor[ops.FindFS](),
	reflect.TypeFor[ops.LineCountFS](),
	reflect.TypeFor[ops.ReplaceFS](),
	reflect.TypeFor[ops.WriteParentsFS](),
	reflect.TypeFor[ops.CheckedOpenFS](),
	reflect.TypeFor[ops.ListFS](),
	reflect.TypeFor[ops.SpillRunner](),
	reflect.TypeFor[ops.DirCheckingRunner](),
	reflect.TypeFor[ops.ProcessLister](),
	reflect.TypeFor[ops.Confiner](),
	reflect.TypeFor[ops.TargetDialer](),
	reflect.TypeFor[ops.CheckpointFS](),
	reflect.TypeFor[ops.TargetListener](),
}

// NotCapabilities are the interfaces of package ops that are not optional
// capabilities of a backend.
var NotCapabilities = []reflect.Type{
	reflect.TypeFor[ops.FS](),
	reflect.TypeFor[ops.Runner](),
	reflect.TypeFor[ops.Backend](),
	reflect.TypeFor[ops.OutputSkipper](), // of a Cmd.Output
}
