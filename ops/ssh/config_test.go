package sshops

import (
	"strings"
	"testing"

	"github.com/kevinburke/ssh_config"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
)

func TestSplitTarget(t *testing.T) {
	for _, tc := range []struct {
		in         string
		user, host string
		port       int
		bad        bool
	}{
		{in: "host", host: "host"},
		{in: "u@host", user: "u", host: "host"},
		{in: "u@host:2222", user: "u", host: "host", port: 2222},
		{in: "127.0.0.1:22", host: "127.0.0.1", port: 22},
		{in: "[::1]:2222", host: "::1", port: 2222},
		{in: "[::1]", host: "::1"},
		{in: "::1", host: "::1"},
		{in: "a@b@host", user: "a@b", host: "host"},
		{in: "host:0", bad: true},
		{in: "host:x", bad: true},
		{in: "u@", bad: true},
	} {
		u, h, p, err := SplitTarget(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("SplitTarget(%q) = %q %q %d, want an error", tc.in, u, h, p)
			}
			continue
		}
		if err != nil || u != tc.user || h != tc.host || p != tc.port {
			t.Errorf("SplitTarget(%q) = %q %q %d %v, want %q %q %d", tc.in, u, h, p, err, tc.user, tc.host, tc.port)
		}
	}
}

func TestResolveAlias(t *testing.T) {
	sc, err := ssh_config.Decode(strings.NewReader(`Host box
  HostName 10.0.0.5
  Port 2200
  User alice
  IdentityFile ~/.ssh/box_key
  ProxyJump bastion,u@hop2:23
Host *
  User bob
`))
	if err != nil {
		t.Fatal(err)
	}
	e, err := resolve(sc, "box", 0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.hostName != "10.0.0.5" || e.port != 2200 || e.user != "alice" || len(e.identities) != 1 ||
		!strings.HasSuffix(e.identities[0], "/.ssh/box_key") || strings.Join(e.jump, ",") != "bastion,u@hop2:23" {
		t.Fatalf("resolve = %+v", e)
	}
	// Explicit values win over the file.
	e, _ = resolve(sc, "box", 22, "root", []string{"/k"})
	if e.port != 22 || e.user != "root" || e.identities[0] != "/k" {
		t.Fatalf("explicit = %+v", e)
	}
	e, _ = resolve(sc, "other", 0, "", nil)
	if e.hostName != "other" || e.port != 22 || e.user != "bob" || len(e.jump) != 0 {
		t.Fatalf("wildcard = %+v", e)
	}
}

func TestWrapQuoting(t *testing.T) {
	if got := shquote.Quote("it's"); got != `'it'\''s'` {
		t.Fatalf("shQuote = %s", got)
	}
	if err := checkEnv([]string{"A_1=x y", "B="}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"1A=x", "A-B=x", "NOEQ", "=x"} {
		if checkEnv([]string{bad}) == nil {
			t.Errorf("checkEnv accepted %q", bad)
		}
	}
}
