package sandbox

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// egressCA is a session's certificate authority for the hosts of inject
// rules: generated when the session opens, its private key only in this
// process's memory; its certificate is what the target trusts.
type egressCA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey // the CA's
	leafKey *ecdsa.PrivateKey // every leaf's (one per session)
	name    string            // a short random name, in the subject and the bundle's file name

	mu     sync.Mutex
	leaves map[string]*tls.Certificate // by host (normalized)
}

// egressCAValidity is how long a session's CA and its leaves are valid: a
// session may be a long-lived serve; the key dies with the process.
const egressCAValidity = 400 * 24 * time.Hour

// maxEgressLeaves bounds the leaf cache: a session that intercepts more
// hosts than this (wildcard rules) signs again instead of keeping more.
const maxEgressLeaves = 1024

func newEgressCA() (*egressCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("sandbox: egress CA: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("sandbox: egress CA: %w", err)
	}
	var id [6]byte
	rand.Read(id[:])
	name := hex.EncodeToString(id[:])
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{Organization: []string{"pi-sandbox"}, CommonName: "pi-sandbox egress CA " + name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(egressCAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("sandbox: egress CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("sandbox: egress CA: %w", err)
	}
	return &egressCA{
		cert: cert, key: key, leafKey: leafKey, name: name,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		leaves:  map[string]*tls.Certificate{},
	}, nil
}

func randomSerial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// leaf returns the session's certificate for host (a normalized name or
// IP literal), made on first use and kept.
func (ca *egressCA) leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[host]; ok {
		return c, nil
	}
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{Organization: []string{"pi-sandbox"}, CommonName: host},
		NotBefore:    ca.cert.NotBefore,
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip.AsSlice())
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("sandbox: egress CA: a certificate for %s: %w", host, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: ca.leafKey}
	if len(ca.leaves) >= maxEgressLeaves {
		clear(ca.leaves)
	}
	ca.leaves[host] = c
	return c, nil
}

// upstreamRoots are the roots an intercepted host's certificate is
// verified with: the system's, plus the PEM files named (a private
// upstream's CA). A file that cannot be read or holds no certificate is a
// configuration error naming it.
func upstreamRoots(files []string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, ops.ConfigError("sandbox: policy: network egressCA: %s", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, ops.ConfigError("sandbox: policy: network egressCA %s: no PEM certificate in it", f)
		}
	}
	return pool, nil
}

// caBundleSources are the system CA bundles a target may have (Debian and
// Alpine, Fedora and RHEL, SUSE, others); the first readable one is
// copied into the session's bundle.
var caBundleSources = []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem"}

// caBundleEnv are the variables that name the session's bundle for the
// clients that read one (OpenSSL, Python requests, Node, git, curl).
var caBundleEnv = []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE"}

// writeCABundle writes, in the target's directory dir, a bundle of the
// target's system CAs (copied there, never through this host) and the
// session's CA certificate, and returns its path.
func writeCABundle(ctx context.Context, b ops.Backend, dir string, ca *egressCA) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("sandbox: egress CA bundle: backend %s has no state directory for it", b.Info().Backend)
	}
	path := dir + "/egress-ca-" + ca.name + ".pem"
	var sources strings.Builder
	for _, s := range caBundleSources {
		sources.WriteString(" " + shquote.Quote(s))
	}
	script := "set -e; umask 022; mkdir -p " + shquote.Quote(dir) + "; f=" + shquote.Quote(path) + "\n" +
		"{ for s in" + sources.String() + "; do if [ -f \"$s\" ] && [ -r \"$s\" ]; then cat \"$s\"; echo; break; fi; done\n" +
		"printf '%s' " + shquote.Quote(string(ca.certPEM)) + "; } > \"$f.tmp\"\nmv -f \"$f.tmp\" \"$f\""
	out := &cappedBuffer{max: 4 << 10}
	ctx, cancel := context.WithTimeout(ctx, egressBundleTimeout)
	defer cancel()
	if err := b.Run(ctx, &ops.Cmd{Command: script, Output: out}); err != nil {
		return "", fmt.Errorf("sandbox: egress CA bundle %s: %w (%s)", path, err, strings.TrimSpace(out.String()))
	}
	return path, nil
}

// removeCABundle removes the session's bundle, as the session ends.
func removeCABundle(b ops.Backend, path string) {
	ctx, cancel := context.WithTimeout(context.Background(), egressBundleTimeout)
	defer cancel()
	b.Run(ctx, &ops.Cmd{Command: "rm -f " + shquote.Quote(path)})
}

// egressBundleTimeout bounds writing and removing the bundle.
const egressBundleTimeout = 30 * time.Second

// cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	strings.Builder
	max int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Builder.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
