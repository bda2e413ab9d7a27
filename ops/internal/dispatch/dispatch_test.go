package dispatch

import (
	"reflect"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
)

// TestDispatcherKeepsEveryCapability: a backend embedding the Dispatcher
// offers every optional capability (without a helper they report
// ops.ErrUnsupported), so an unconfined docker, ssh or k8s sandbox keeps
// the helper's fast paths.
func TestDispatcherKeepsEveryCapability(t *testing.T) {
	for _, c := range opstest.Capabilities {
		if !reflect.TypeFor[*Dispatcher]().Implements(c) && !implementsBut(c) {
			t.Errorf("*Dispatcher lacks %v", c)
		}
	}
}

// implementsBut: the interfaces that embed ops.Backend (Info and Close are
// the embedding backend's) are checked on their methods alone.
func implementsBut(c reflect.Type) bool {
	d := reflect.TypeFor[*Dispatcher]()
	for i := range c.NumMethod() {
		m := c.Method(i)
		if m.Name == "Info" || m.Name == "Close" {
			continue
		}
		if _, ok := d.MethodByName(m.Name); !ok {
			return false
		}
	}
	return true
}
