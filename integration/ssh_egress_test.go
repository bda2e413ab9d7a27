package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// TestSSHEgress: on an ssh host (whose loopback is shared) the session's
// proxy needs its credential, which the commands' HTTP_PROXY carries;
// curl reaches the test's server on the host through it (the test's sshd
// runs on this host).
func TestSSHEgress(t *testing.T) {
	s := sshtest.Start(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello over ssh") }))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	cmd := `case "$HTTP_PROXY" in http://pi-sandbox:*@127.0.0.1:*) echo credential;; esac
NO_PROXY= no_proxy= curl -sS http://` + addr + `/; echo
p=${HTTP_PROXY##*@}; NO_PROXY= no_proxy= curl -sS -x "http://$p" http://` + addr + `/`
	in, _ := json.Marshal(map[string]any{"command": cmd})
	out, errs, code := pi(t, "", "tool", "--backend", "ssh", "--host", s.User+"@"+s.Addr(), "--identity", s.IdentityFile,
		"--known-hosts", s.KnownHostsFile, "--workdir", s.TempDir(t), "--allow-host", addr, "bash", string(in))
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("tool: code %d, out %q, stderr %s", code, out, errs)
	}
	text := res.Content[0].Text
	if !strings.Contains(text, "credential\nhello over ssh\n") || !strings.Contains(text, "needs the session's credential") {
		t.Errorf("bash printed %q; want the credential, the answer, and the refusal without it", text)
	}
}
