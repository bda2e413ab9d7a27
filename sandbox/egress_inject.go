package sandbox

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// InjectRule adds a header to the requests the session's proxy sends to
// one host, plain HTTP and HTTPS (terminated by the proxy), outside the
// target: commands never see the value.
type InjectRule struct {
	// Host has an allow rule's syntax (a name, "*.domain" or an IP literal,
	// optional ":PORT") and is allowed by it.
	Host string `json:"host"`
	// Header is the header's name; it replaces any the client sent.
	Header string `json:"header"`
	// Value is the header's value; ${NAME} is the host's variable NAME
	// (unset: an error naming it). A variable named here is removed from
	// what commands inherit, and the value is redacted from results and
	// the audit log.
	Value string `json:"value"`
}

// injectRule is a compiled InjectRule.
type injectRule struct {
	host   hostRule
	header string // canonical
	value  string // expanded
}

// compiledInject is a policy's inject rules: the rules, the variables they
// name and the secrets to redact.
type compiledInject struct {
	rules   []injectRule
	names   []string // the variables the values name
	secrets []string // the expanded values and the variables' values
}

// refusedInjectHeaders are headers a rule may not set: the proxy or the
// HTTP framing owns them.
var refusedInjectHeaders = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection", "Proxy-Authorization", "Proxy-Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"}

// compileInject checks the rules and expands their values through lookup
// (nil: the syntax is checked, nothing is read).
func compileInject(rules []InjectRule, lookup func(string) (string, bool)) (*compiledInject, error) {
	ci := &compiledInject{}
	for _, r := range rules {
		bad := func(format string, a ...any) error {
			return ops.ConfigError("sandbox: policy: network inject rule for %q: %s", r.Host, fmt.Sprintf(format, a...))
		}
		hr, err := parseHostRule(r.Host)
		if err != nil {
			return nil, bad("%s", err)
		}
		if !validHeaderName(r.Header) {
			return nil, bad("header %q is not a header name", r.Header)
		}
		header := http.CanonicalHeaderKey(r.Header)
		if slices.Contains(refusedInjectHeaders, header) {
			return nil, bad("header %s belongs to the proxy, a rule cannot set it", header)
		}
		value, names, err := expandVars(r.Value, lookup)
		if err != nil {
			return nil, bad("%s", err)
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			return nil, bad("the value of header %s holds a line break or NUL", header)
		}
		ci.rules = append(ci.rules, injectRule{host: hr, header: header, value: value})
		for _, n := range names {
			if !slices.Contains(ci.names, n) {
				ci.names = append(ci.names, n)
			}
			if v, ok := lookupOr(lookup, n); ok {
				ci.secrets = append(ci.secrets, v)
			}
		}
		if lookup != nil {
			ci.secrets = append(ci.secrets, value)
		}
	}
	return ci, nil
}

func lookupOr(lookup func(string) (string, bool), name string) (string, bool) {
	if lookup == nil {
		return "", false
	}
	return lookup(name)
}

// expandVars replaces each ${NAME} of s with the host's value; a "$" not
// followed by "{" is kept. It returns the names it read.
func expandVars(s string, lookup func(string) (string, bool)) (string, []string, error) {
	var b strings.Builder
	var names []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), names, nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", nil, fmt.Errorf("unclosed ${ in the value")
		}
		name := s[i+2 : i+end]
		if !validVarName(name) {
			return "", nil, fmt.Errorf("${%s} does not name a variable", name)
		}
		names = append(names, name)
		if lookup != nil {
			v, ok := lookup(name)
			if !ok {
				return "", nil, fmt.Errorf("the value names ${%s}, which is not set on this host", name)
			}
			b.WriteString(v)
		}
		s = s[i+end+1:]
	}
}

func validVarName(n string) bool {
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		return false
	}
	for _, c := range n {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// validHeaderName accepts an HTTP field name (a token).
func validHeaderName(n string) bool {
	if n == "" {
		return false
	}
	for _, c := range n {
		if c > 0x7e || c <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c) {
			return false
		}
	}
	return true
}

// allowRules are the rules' hosts, which the rules allow.
func (ci *compiledInject) allowRules() egressRules {
	if ci == nil {
		return nil
	}
	out := make(egressRules, len(ci.rules))
	for i, r := range ci.rules {
		out[i] = r.host
	}
	return out
}

// apply sets the headers the rules give for host (normalized) on port.
func (ci *compiledInject) apply(h http.Header, host string, ip netip.Addr, port int) {
	if ci == nil {
		return
	}
	for _, r := range ci.rules {
		if r.host.matches(host, ip, port) {
			h.Set(r.header, r.value)
		}
	}
}

// String lists the hosts and headers, for Info (never the values).
func (ci *compiledInject) String() string {
	s := make([]string, len(ci.rules))
	for i, r := range ci.rules {
		s[i] = r.host.text + " (" + r.header + ")"
	}
	return strings.Join(s, ", ")
}

// withoutNames drops the entries of env (KEY=VALUE) whose key is one of
// names.
func withoutNames(env []string, names []string) []string {
	if len(names) == 0 || env == nil {
		return env
	}
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, k) {
			out = append(out, kv)
		}
	}
	return out
}
