package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

const httpsSecret = "tok-https-inject-4b1d"

// httpsSeen is what an HTTPS test server saw of one request.
type httpsSeen struct{ agent, auth, proto string }

// httpsServer starts an HTTPS server on 127.0.0.1 (HTTP/2 and HTTP/1.1)
// with cert (nil: httptest's own); it answers with the Authorization header
// it got and sends what it saw on the channel. It returns the server and a
// PEM file of the CA that vouches for it.
func httpsServer(t *testing.T, cert *tls.Certificate) (*httptest.Server, string, <-chan httpsSeen) {
	t.Helper()
	seen := make(chan httpsSeen, 16)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- httpsSeen{r.UserAgent(), r.Header.Get("Authorization"), r.Proto}
		io.WriteString(w, "auth="+r.Header.Get("Authorization"))
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the proxy's refusal of an untrusted one
	if cert != nil {
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, ca, seen
}

// selfSigned is a certificate for 127.0.0.1 that no CA vouches for.
func selfSigned(t *testing.T) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "untrusted"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// sandboxBash returns a function that runs one bash call through sb's
// loop (its policy: redaction) and returns the result's text.
func sandboxBash(t *testing.T, ctx context.Context, sb *sandbox.Sandbox) func(string) string {
	l, err := sb.NewLoop()
	if err != nil {
		t.Fatal(err)
	}
	return func(cmd string) string {
		t.Helper()
		args, _ := json.Marshal(map[string]string{"command": cmd})
		r := l.RunBatch(ctx, nil, []loop.ToolCall{{ID: "1", Name: "bash", Arguments: args}}, nil).Results[0].Result
		if len(r.Content) == 0 {
			t.Fatalf("bash %q: no content", cmd)
		}
		return r.Content[0].Text
	}
}

// checkHTTPSInject: in a sandbox on b (pi-sandbox/debian, no network), curl
// and git reach a host-side HTTPS server through the session's proxy,
// which terminates TLS with the session's CA and adds the inject rule's
// header (curl over HTTP/2 and HTTP/1.1); the value is in no variable and
// not in the bundle, the echoed value is redacted; a host with only an
// allow rule is tunnelled (the client sees the server's own certificate);
// an inject host whose certificate nothing vouches for is the CONNECT's
// 502 with the reason.
func checkHTTPSInject(t *testing.T, b ops.Backend) {
	t.Helper()
	t.Setenv("PI_TEST_INJECT_TOKEN", httpsSecret)
	good, goodCA, seen := httpsServer(t, nil)
	plain, _, _ := httpsServer(t, nil)
	bad, _, _ := httpsServer(t, selfSigned(t))
	goodAddr, plainAddr, badAddr := good.Listener.Addr().String(), plain.Listener.Addr().String(), bad.Listener.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sb, err := sandbox.OpenBackend(ctx, b, sandbox.Config{Policy: sandbox.Policy{Network: sandbox.NetworkPolicy{
		Allow: []string{plainAddr},
		Inject: []sandbox.InjectRule{
			{Host: goodAddr, Header: "Authorization", Value: "Bearer ${PI_TEST_INJECT_TOKEN}"},
			{Host: badAddr, Header: "Authorization", Value: "Bearer ${PI_TEST_INJECT_TOKEN}"},
		},
		EgressCA: []string{goodCA},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	bash := sandboxBash(t, ctx, sb)
	next := func(what string) httpsSeen {
		t.Helper()
		select {
		case s := <-seen:
			return s
		default:
			t.Fatalf("%s: the server saw no request", what)
			return httpsSeen{}
		}
	}

	for _, v := range []struct{ flag, proto, serverProto string }{{"--http2", "2", "HTTP/2.0"}, {"--http1.1", "1.1", "HTTP/2.0"}} {
		text := bash(`NO_PROXY= no_proxy= curl -sS ` + v.flag + ` -H 'Authorization: Bearer mine' -w '\nproto=%{http_version}\n' https://` + goodAddr + `/x`)
		if !strings.Contains(text, "auth=[REDACTED]\nproto="+v.proto+"\n") || strings.Contains(text, httpsSecret) {
			t.Errorf("curl %s: %q", v.flag, text)
		}
		if s := next("curl " + v.flag); s.auth != "Bearer "+httpsSecret || !strings.HasPrefix(s.agent, "curl/") || s.proto != v.serverProto {
			t.Errorf("curl %s: the server saw %+v", v.flag, s)
		}
	}
	// git asks once or more (its smart protocol, then perhaps the dumb
	// one): every request carries the header.
	bash(`NO_PROXY= no_proxy= git ls-remote https://` + goodAddr + `/repo.git 2>&1; true`)
	for s := next("git"); ; s = <-seen {
		if s.auth != "Bearer "+httpsSecret || !strings.HasPrefix(s.agent, "git/") {
			t.Errorf("git: the server saw %+v", s)
		}
		if len(seen) == 0 {
			break
		}
	}

	// The environment names the bundle five ways; the bundle holds the
	// system's CAs and the session's, never the value.
	text := bash(`env | grep -c PI_TEST_INJECT_TOKEN; for v in SSL_CERT_FILE REQUESTS_CA_BUNDLE NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO CURL_CA_BUNDLE; do printenv $v; done | sort -u | wc -l; ` +
		`grep -c 'BEGIN CERTIFICATE' "$SSL_CERT_FILE"; grep -rlE 'tok-https-inject-4b1[d]' "$(dirname "$SSL_CERT_FILE")" /tmp /workspace 2>/dev/null | wc -l`)
	if f := strings.Fields(text); len(f) != 4 || f[0] != "0" || f[1] != "1" || atoi(f[2]) < 2 || f[3] != "0" {
		t.Errorf("environment, bundle and files: %q (want 0 variables with the value, 1 bundle, its certificates, 0 files with the value)", text)
	}

	text = bash(`NO_PROXY= no_proxy= curl -sS -k -v -w '\n' https://` + plainAddr + `/ 2>&1 | grep -iE 'issuer:|^auth='`)
	if !strings.Contains(text, "Acme Co") || strings.Contains(text, "pi-sandbox") || !strings.HasSuffix(text, "\nauth=\n") {
		t.Errorf("a host without an inject rule: %q (want the server's own certificate, no header)", text)
	}

	text = bash(`p=${HTTPS_PROXY#http://}; exec 3<>/dev/tcp/${p%:*}/${p##*:}; printf 'CONNECT ` + badAddr + ` HTTP/1.1\r\nHost: ` + badAddr + `\r\n\r\n' >&3; timeout 20 cat <&3`)
	if !strings.Contains(text, "502 Bad Gateway") || !strings.Contains(text, "pi-sandbox: egress to "+badAddr+" failed: the server's certificate is not trusted") {
		t.Errorf("an untrusted upstream: %q", text)
	}
}

// TestDockerHTTPSInject: checkHTTPSInject on runc, and through the command
// line (--config and --egress-ca) in an `up` sandbox.
func TestDockerHTTPSInject(t *testing.T) {
	needImage(t, "pi-sandbox/debian")
	checkHTTPSInject(t, newBackend(t, docker.Config{Image: "pi-sandbox/debian"}))

	t.Setenv("PI_TEST_INJECT_TOKEN", httpsSecret)
	srv, ca, seen := httpsServer(t, nil)
	addr := srv.Listener.Addr().String()
	policy := filepath.Join(t.TempDir(), "policy.json")
	rule := fmt.Sprintf(`{"network":{"inject":[{"host":%q,"header":"Authorization","value":"Bearer ${PI_TEST_INJECT_TOKEN}"}]}}`, addr)
	if err := os.WriteFile(policy, []byte(rule), 0o600); err != nil {
		t.Fatal(err)
	}
	id := piUpDebian(t, "https-inject")
	text, isErr := bashIn(t, id, `NO_PROXY= no_proxy= curl -sS https://`+addr+`/cli`, "--config", policy, "--egress-ca", ca)
	if isErr || text != "auth=[REDACTED]" {
		t.Errorf("curl through the CLI: %q (error %v)", text, isErr)
	}
	if s := <-seen; s.auth != "Bearer "+httpsSecret {
		t.Errorf("the server saw %+v", s)
	}
	if _, errs, code := pi(t, "", "tool", "--container", id, "--config", policy, "--egress-ca", "/nonexistent/ca.pem", "ls", "{}"); code != 2 || !strings.Contains(errs, "/nonexistent/ca.pem") {
		t.Errorf("a missing --egress-ca file: exit %d, stderr %q", code, errs)
	}
}

// TestRunscHTTPSInject: checkHTTPSInject on gVisor.
func TestRunscHTTPSInject(t *testing.T) {
	needRuntime(t, "pi-sandbox/debian", runsc)
	checkHTTPSInject(t, newBackend(t, docker.Config{Image: "pi-sandbox/debian", Runtime: runsc}))
}

// TestK8sHTTPSInject: checkHTTPSInject in a pod.
func TestK8sHTTPSInject(t *testing.T) {
	checkHTTPSInject(t, newK8s(t, k8s.Config{Image: k8sDebian}, "https-inject"))
}
