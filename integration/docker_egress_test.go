package integration

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDockerEgress: a command in an `up` sandbox (no network) reaches a
// server on the host's 127.0.0.1 through its session's proxy when a rule
// names 127.0.0.1:PORT, and gets the policy's 403 without one; a name
// that resolves to loopback and the metadata address are refused; the
// proxy's port closes with the session.
func TestDockerEgress(t *testing.T) {
	needDocker(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from the host "+r.URL.Path)
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	port := fmt.Sprint(srv.Listener.Addr().(*net.TCPAddr).Port)
	id, _ := piUp(t, "egress")

	// busybox wget uses http_proxy; NO_PROXY would keep 127.0.0.1 (the
	// host's, for the rule) off the proxy for clients that read it.
	text, isErr := bashIn(t, id, `echo "proxy=$HTTP_PROXY"; NO_PROXY= no_proxy= wget -q -O - http://`+addr+`/ok`, "--allow-host", addr)
	if isErr || !strings.Contains(text, "hello from the host /ok") || !strings.Contains(text, "proxy=http://127.0.0.1:") || strings.Contains(text, "@") {
		t.Fatalf("allowed: %q (error %v)", text, isErr)
	}
	proxy := strings.TrimSpace(strings.SplitN(strings.SplitN(text, "proxy=http://", 2)[1], "\n", 2)[0])

	// ask sends one request to the session's proxy with nc (the answer's
	// body is the point: wget does not print it) and prints the answer.
	ask := func(target string) string {
		return `p=${HTTP_PROXY#http://}; nc ${p%:*} ${p##*:} -e sh -c 'printf "GET http://` + target + `/ HTTP/1.0\r\n\r\n"; cat >&2' 2>&1`
	}
	text, _ = bashIn(t, id, ask(addr), "--allow-host", "example.com")
	if want := "pi-sandbox: egress to " + addr + " denied by policy (allowed: example.com)"; !strings.Contains(text, "403 Forbidden") || !strings.Contains(text, want) {
		t.Errorf("no rule for the server: %q, want 403 and %q", text, want)
	}
	text, _ = bashIn(t, id, ask("localhost:"+port), "--allow-host", "localhost:"+port)
	if !strings.Contains(text, "403 Forbidden") || !strings.Contains(text, "localhost resolves to") || !strings.Contains(text, "loopback") {
		t.Errorf("a name resolving to loopback: %q", text)
	}
	text, _ = bashIn(t, id, ask("169.254.169.254"), "--allow-host", "example.com")
	if !strings.Contains(text, "403 Forbidden") || !strings.Contains(text, "egress to 169.254.169.254:80 denied by policy") {
		t.Errorf("the metadata address: %q", text)
	}
	// The first session's proxy is gone with it.
	text, _ = bashIn(t, id, `HTTP_PROXY=http://`+proxy+`; `+ask(addr)+`; echo "rc=$?"`)
	if strings.Contains(text, "hello from the host") || !strings.Contains(text, "rc=1") {
		t.Errorf("the first session's proxy still answers: %q", text)
	}

	// Without the helper there is no way out, and the call says so; a
	// malformed rule is a usage error naming it.
	if _, errs, code := pi(t, "", "tool", "--container", id, "--no-helper", "--allow-host", addr, "ls", "{}"); code == 0 || !strings.Contains(errs, "egress proxy") || !strings.Contains(errs, "helper") {
		t.Errorf("--no-helper with a rule: exit %d, stderr %q", code, errs)
	}
	if _, errs, code := pi(t, "", "tool", "--container", id, "--allow-host", "https://example.com", "ls", "{}"); code != 2 || !strings.Contains(errs, `"https://example.com"`) {
		t.Errorf("a malformed rule: exit %d, stderr %q", code, errs)
	}
}

// TestDockerEgressInject: a plain-HTTP request of a command in an `up`
// sandbox reaches a host-side server with the header an inject rule adds
// outside the target (the client's own value replaced); the value is not
// in the command's environment or the sandbox's files, and a result that
// shows it (the server echoes it) has it redacted. A rule naming an unset
// variable is refused (exit 2) naming it.
func TestDockerEgressInject(t *testing.T) {
	needDocker(t)
	const secret = "tok-inject-7d21e9b0"
	addr, seen := injectServer(t, secret)
	policy := filepath.Join(t.TempDir(), "policy.json")
	rule := fmt.Sprintf(`{"network":{"inject":[{"host":%q,"header":"Authorization","value":"Bearer ${PI_TEST_INJECT_TOKEN}"}]}}`, addr)
	if err := os.WriteFile(policy, []byte(rule), 0o600); err != nil {
		t.Fatal(err)
	}
	id, _ := piUp(t, "egress-inject")

	// The file search's pattern matches the value without holding it.
	text, isErr := bashIn(t, id, `NO_PROXY= no_proxy= wget -q -O - --header "Authorization: Bearer mine" http://`+addr+`/x; echo; env | grep -c PI_TEST_INJECT_TOKEN; grep -rlE 'tok-inject-7d21e9b[0]' /workspace /tmp /var/lib/pi-sandbox 2>/dev/null | wc -l`, "--config", policy)
	if isErr || !strings.Contains(text, "you sent [REDACTED]") || strings.Contains(text, secret) {
		t.Fatalf("through the proxy: %q (error %v)", text, isErr)
	}
	if got := <-seen; got != "Bearer "+secret {
		t.Errorf("the server saw Authorization %q", got)
	}
	if lines := strings.Fields(text); len(lines) < 2 || lines[len(lines)-2] != "0" || lines[len(lines)-1] != "0" {
		t.Errorf("the value in the environment or files: %q", text)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"network":{"inject":[{"host":"api.example.com","header":"Authorization","value":"${PI_TEST_UNSET_VAR}"}]}}`), 0o600)
	if _, errs, code := pi(t, "", "tool", "--container", id, "--config", bad, "ls", "{}"); code != 2 || !strings.Contains(errs, "${PI_TEST_UNSET_VAR}") {
		t.Errorf("an unset variable: exit %d, stderr %q", code, errs)
	}
}

// injectServer sets PI_TEST_INJECT_TOKEN to secret and starts a host-side
// server that answers with the Authorization header it got (echoing it)
// and sends it on the channel; it returns the server's address.
func injectServer(t *testing.T, secret string) (string, <-chan string) {
	t.Setenv("PI_TEST_INJECT_TOKEN", secret)
	seen := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get("Authorization")
		io.WriteString(w, "you sent "+r.Header.Get("Authorization"))
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), seen
}
