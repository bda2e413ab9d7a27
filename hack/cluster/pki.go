package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// writePKI writes a CA, the apiserver's serving certificate signed by it, the
// service-account key pair and an admin bearer token, and returns the token.
func writePKI(l layout) (string, error) {
	if err := os.MkdirAll(l.pki(""), 0o700); err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	now := time.Now().Add(-time.Hour)
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pi-sandbox-cluster-ca"},
		NotBefore: now, NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	ca, _ = x509.ParseCertificate(caDER)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	srv := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now, NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 96, 0, 1)},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	var tok [16]byte
	rand.Read(tok[:])
	token := hex.EncodeToString(tok[:])
	files := []struct {
		name, typ string
		der       []byte
	}{
		{"ca.crt", "CERTIFICATE", caDER},
		{"apiserver.crt", "CERTIFICATE", srvDER},
		{"apiserver.key", "PRIVATE KEY", mustPKCS8(srvKey)},
		{"sa.key", "PRIVATE KEY", mustPKCS8(saKey)},
		{"sa.pub", "PUBLIC KEY", mustPKIX(&saKey.PublicKey)},
	}
	for _, f := range files {
		if err := os.WriteFile(l.pki(f.name), pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			return "", fmt.Errorf("cluster: %w", err)
		}
	}
	// token,user,uid,"groups": the admin token, used by the tests and every component.
	csv := fmt.Sprintf("%s,admin,admin,\"system:masters\"\n", token)
	if err := os.WriteFile(l.pki("tokens.csv"), []byte(csv), 0o600); err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	return token, nil
}

func mustPKCS8(k any) []byte {
	b, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		panic(err)
	}
	return b
}

func mustPKIX(k any) []byte {
	b, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		panic(err)
	}
	return b
}
