package integration

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRunscEgress: the session's proxy in an `up` sandbox under gVisor,
// whose loopback is its own netstack's, reaches a server on the host.
func TestRunscEgress(t *testing.T) {
	image := "pi-sandbox/busybox"
	needRuntime(t, image, runsc)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello gvisor") }))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	purpose := "egress-runsc"
	t.Cleanup(func() { checkNoContainers(t, "pi-sandbox.test="+purpose) })
	out, errs, code := pi(t, "", "up", "--image", image, "--runtime", runsc, "--label", runLabel+"="+runID, "--label", "pi-sandbox.test="+purpose)
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 64 {
		t.Fatalf("up: code %d, out %q, err %s", code, out, errs)
	}
	t.Cleanup(func() { pi(t, "", "down", id) })
	text, isErr := bashIn(t, id, `NO_PROXY= no_proxy= wget -q -O - http://`+addr+`/`, "--allow-host", addr)
	if isErr || text != "hello gvisor" {
		t.Errorf("through the proxy: %q (error %v)", text, isErr)
	}
	text, _ = bashIn(t, id, `NO_PROXY= no_proxy= wget -q -O - http://`+addr+`/ 2>&1`, "--allow-host", "example.com")
	if !strings.Contains(text, "403 Forbidden") {
		t.Errorf("without a rule: %q", text)
	}
}
