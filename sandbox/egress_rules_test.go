package sandbox

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

func TestHostRuleMatching(t *testing.T) {
	rules, err := compileHostRules([]string{"github.com", "*.pypi.org", "proxy.golang.org:443", "10.1.2.3:8080", "[fd00::1]:22", "GitLab.COM."})
	if err != nil {
		t.Fatal(err)
	}
	rs := egressRules(rules)
	for _, tc := range []struct {
		host string
		port int
		want bool
	}{
		{"github.com", 443, true},
		{"github.com", 80, true},
		{"github.com", 22, false}, // no port in the rule: 80 and 443
		{"api.github.com", 443, false},
		{"files.pypi.org", 443, true},
		{"a.b.pypi.org", 443, true},
		{"pypi.org", 443, false}, // a wildcard is the subdomains
		{"evilpypi.org", 443, false},
		{"proxy.golang.org", 443, true},
		{"proxy.golang.org", 80, false},
		{"10.1.2.3", 8080, true},
		{"10.1.2.3", 80, false},
		{"[fd00::1]", 22, true},
		{"gitlab.com", 443, true},
		{"GITHUB.COM.", 443, true},
	} {
		name, ip := normHost(tc.host)
		if got := rs.allows(name, ip, tc.port); got != tc.want {
			t.Errorf("allows(%s:%d) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
}

func TestHostRuleMalformed(t *testing.T) {
	for _, r := range []string{"", "https://github.com", "github.com/x", "a b", "github.com:0", "github.com:70000", "github.com:x", "a.*.com", "*", "[::1", "[1.2.3.4]:80", "::1:2:zz", "user@host", "ex ample.com", "a..b"} {
		_, err := compileHostRules([]string{"ok.example", r})
		if err == nil {
			t.Errorf("rule %q accepted", r)
			continue
		}
		if !errors.Is(err, ops.ErrConfig) || !strings.Contains(err.Error(), `"`+r+`"`) {
			t.Errorf("rule %q: %v; want a configuration error naming the rule", r, err)
		}
	}
	if _, err := ParsePolicy([]byte(`{"network":{"allow":["github.com","bad/rule"]}}`)); err == nil || !strings.Contains(err.Error(), `"bad/rule"`) {
		t.Errorf("ParsePolicy with a bad rule: %v", err)
	}
	if _, err := ParsePolicy([]byte(`{"network":{"allow":["github.com","*.pypi.org","proxy.golang.org:443","10.1.2.3:8080"]}}`)); err != nil {
		t.Errorf("the documented example: %v", err)
	}
}

func TestSpecialAddresses(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "127.255.0.9", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "::1", "fc00::1", "fd00:ec2::254", "fe80::1", "0.0.0.0", "::", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "100.64.0.1", "224.0.0.1"} {
		if specialAddr(netip.MustParseAddr(a)) == "" {
			t.Errorf("%s is not refused", a)
		}
	}
	for _, a := range []string{"8.8.8.8", "172.32.0.1", "192.169.0.1", "2606:4700::1111", "1.1.1.1"} {
		if w := specialAddr(netip.MustParseAddr(a)); w != "" {
			t.Errorf("%s is %s", a, w)
		}
	}
	rules, _ := compileHostRules([]string{"127.0.0.1:8080", "10.1.2.3"})
	rs := egressRules(rules)
	for _, tc := range []struct {
		ip   string
		port int
		want bool
	}{
		{"127.0.0.1", 8080, true},
		{"127.0.0.1", 80, false},
		{"127.0.0.2", 8080, false},
		{"10.1.2.3", 443, true},
		{"10.1.2.3", 8080, false},
		{"169.254.169.254", 80, false},
		{"93.184.216.34", 80, true},
	} {
		if got, _ := rs.addrAllowed(netip.MustParseAddr(tc.ip), tc.port); got != tc.want {
			t.Errorf("addrAllowed(%s, %d) = %v, want %v", tc.ip, tc.port, got, tc.want)
		}
	}
}
