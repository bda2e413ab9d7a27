package images

import (
	"context"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
)

func TestRegistry(t *testing.T) {
	for _, n := range []string{"pi-sandbox/busybox", "pi-sandbox/debian"} {
		if _, ok := Lookup(n); !ok {
			t.Errorf("%s not registered", n)
		}
	}
	if err := (&Builder{}).Ensure(context.Background(), "pi-sandbox/nope"); err == nil || !strings.Contains(err.Error(), "unknown image") {
		t.Errorf("Ensure(unknown) = %v", err)
	}
}

func TestContentTagStable(t *testing.T) {
	img, _ := Lookup("pi-sandbox/debian")
	a, err := ContentTag(img)
	if err != nil {
		testenv.SkipOrFail(t, "no Debian apt sources on this host: "+err.Error())
	}
	b, _ := ContentTag(img)
	if a != b || len(a) != 12 {
		t.Errorf("tags %q %q", a, b)
	}
}

func TestFirstMirror(t *testing.T) {
	srcs, err := aptSources()
	if err != nil {
		testenv.SkipOrFail(t, "no Debian apt sources on this host: "+err.Error())
	}
	m, err := firstMirror(srcs)
	if err != nil || !strings.Contains(m, "://") {
		t.Errorf("firstMirror = %q, %v", m, err)
	}
}
