package sandbox

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// NetworkPolicy is the egress allow-list of a sandbox's commands: with a
// rule, each session gets its own HTTP(S) proxy on the target's loopback
// (see docs/network.md) and its commands get HTTP_PROXY and its peers; the
// proxy lets through what a rule allows.
type NetworkPolicy struct {
	// Allow lists host patterns: a name ("github.com"), a wildcard of its
	// subdomains ("*.pypi.org", not pypi.org itself) or an IP literal
	// ("10.1.2.3", "[::1]"), each with an optional ":PORT". Without a
	// port a rule allows 80 and 443. A name is resolved by the host; an
	// address that is loopback, private, link-local or another special
	// range is refused unless an IP-literal rule names it.
	Allow []string `json:"allow,omitempty"`
	// MaxConnections bounds the proxy connections open at once (zero:
	// DefaultMaxEgressConnections); the next is answered 503.
	MaxConnections int `json:"maxConnections,omitempty"`
	// Inject adds headers to the requests for a host outside the target
	// (see [InjectRule]); a rule's host is allowed. HTTPS to it is
	// terminated by the proxy with a CA made for the session, which the
	// session's commands trust.
	Inject []InjectRule `json:"inject,omitempty"`
	// EgressCA names PEM files on this host with CA certificates that an
	// inject host's certificate may chain to, besides the system's roots
	// (a private upstream).
	EgressCA []string `json:"egressCA,omitempty"`
	// AllowSharedInject lets inject rules run where the proxy listens on a
	// loopback other users of the host share (local, ssh): any process
	// holding the session's proxy credential gets the header added.
	AllowSharedInject bool `json:"allowSharedInject,omitempty"`
}

// hostRule is one compiled allow rule.
type hostRule struct {
	text     string
	name     string     // a lower-case name without a trailing dot; "" for an IP rule
	wildcard bool       // name is a suffix: "*.name" matches its subdomains
	ip       netip.Addr // an IP-literal rule (unmapped)
	port     int        // 0: 80 and 443
}

// compileHostRules checks and compiles the allow rules; a malformed one is
// a configuration error naming it.
func compileHostRules(rules []string) ([]hostRule, error) {
	out := make([]hostRule, 0, len(rules))
	for _, r := range rules {
		hr, err := parseHostRule(r)
		if err != nil {
			return nil, ops.ConfigError("sandbox: policy: network allow rule %q: %s", r, err)
		}
		out = append(out, hr)
	}
	return out, nil
}

func parseHostRule(r string) (hostRule, error) {
	hr := hostRule{text: r}
	s := r
	switch {
	case s == "":
		return hr, fmt.Errorf("empty")
	case strings.Contains(s, "://"):
		return hr, fmt.Errorf("name a host, not a URL (github.com, *.pypi.org, host:443)")
	case strings.ContainsAny(s, "/?#@ \t\n"):
		return hr, fmt.Errorf("a host pattern has no path, user or spaces")
	}
	host := s
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return hr, fmt.Errorf("unclosed [")
		}
		host = s[1:end]
		rest := s[end+1:]
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return hr, fmt.Errorf("unexpected %q after ]", rest)
			}
			port, err := parsePort(p)
			if err != nil {
				return hr, err
			}
			hr.port = port
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Is6() {
			return hr, fmt.Errorf("[%s] is not an IPv6 address", host)
		}
		hr.ip = ip.Unmap()
		return hr, nil
	}
	if strings.Count(s, ":") > 1 {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return hr, fmt.Errorf("not an IP address (write an IPv6 address with a port as [ADDR]:PORT)")
		}
		hr.ip = ip.Unmap()
		return hr, nil
	}
	if h, p, ok := strings.Cut(s, ":"); ok {
		port, err := parsePort(p)
		if err != nil {
			return hr, err
		}
		host, hr.port = h, port
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		hr.ip = ip.Unmap()
		return hr, nil
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		hr.wildcard, name = true, rest
	}
	if err := checkHostName(name); err != nil {
		return hr, err
	}
	hr.name = name
	return hr, nil
}

func parsePort(p string) (int, error) {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 || strings.HasPrefix(p, "+") {
		return 0, fmt.Errorf("port %q is not a number in 1-65535", p)
	}
	return n, nil
}

// checkHostName accepts a DNS name: labels of letters, digits, '-' and
// '_', none empty.
func checkHostName(name string) error {
	if name == "" {
		return fmt.Errorf("no host name")
	}
	if len(name) > 253 {
		return fmt.Errorf("host name longer than 253 bytes")
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("empty or over-long label in %q", name)
		}
		for _, c := range label {
			ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
			if !ok {
				if c == '*' {
					return fmt.Errorf("a wildcard is only a leading \"*.\"")
				}
				return fmt.Errorf("character %q in a host name", c)
			}
		}
	}
	return nil
}

func (r hostRule) portOK(port int) bool {
	if r.port == 0 {
		return port == 80 || port == 443
	}
	return r.port == port
}

// matchesName reports whether the rule allows host (lower-case, no
// trailing dot; an IP literal for IP rules) on port.
func (r hostRule) matches(host string, ip netip.Addr, port int) bool {
	if !r.portOK(port) {
		return false
	}
	if r.ip.IsValid() {
		return ip.IsValid() && ip == r.ip
	}
	if ip.IsValid() {
		return false
	}
	if r.wildcard {
		return strings.HasSuffix(host, "."+r.name)
	}
	return host == r.name
}

// normHost lower-cases a requested host, drops a trailing dot and the
// brackets of an IPv6 literal, and parses an IP literal.
func normHost(h string) (string, netip.Addr) {
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")), ".")
	if ip, err := netip.ParseAddr(h); err == nil {
		return h, ip.Unmap()
	}
	return h, netip.Addr{}
}

// specialRanges are the addresses a name may not resolve to unless an
// IP-literal rule names the address.
var specialRanges = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("fc00::/7"), "a private address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local (cloud metadata) address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified address"},
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
	{netip.MustParsePrefix("255.255.255.255/32"), "the broadcast address"},
}

// specialAddr says what kind of special address ip is, "" for a public one.
func specialAddr(ip netip.Addr) string {
	ip = ip.Unmap()
	for _, r := range specialRanges {
		if r.prefix.Contains(ip) {
			return r.what
		}
	}
	return ""
}

// egressRules are a session's compiled rules.
type egressRules []hostRule

// allows reports whether a rule allows host on port.
func (rs egressRules) allows(host string, ip netip.Addr, port int) bool {
	for _, r := range rs {
		if r.matches(host, ip, port) {
			return true
		}
	}
	return false
}

// addrAllowed reports whether ip may be dialled on port: a public address,
// or one an IP-literal rule names (with its port).
func (rs egressRules) addrAllowed(ip netip.Addr, port int) (bool, string) {
	what := specialAddr(ip)
	if what == "" {
		return true, ""
	}
	for _, r := range rs {
		if r.ip.IsValid() && r.ip == ip.Unmap() && r.portOK(port) {
			return true, ""
		}
	}
	return false, what
}

// String lists the rules, for refusals and Info.
func (rs egressRules) String() string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.text
	}
	return strings.Join(s, ", ")
}

// hostPort formats a requested host and port for messages.
func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
