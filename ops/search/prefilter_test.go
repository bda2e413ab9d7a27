package search

import (
	"testing"
)

// TestPrefilterApplies: the patterns that used to scan every byte with the
// regexp get a prefilter; those without a required literal do not.
func TestPrefilterApplies(t *testing.T) {
	for _, c := range []struct {
		pattern    string
		ignoreCase bool
		want       bool
	}{
		{`(?i)func newreader`, false, true},
		{`func newreader`, true, true},
		{`(?i)über`, false, true},
		{`ÜBER|straße`, false, true},
		{`(?i)xyzzy_nomatch`, false, true},
		{`func NewReader`, false, true},
		{`\bfoo\w+bar`, true, true},
		{`(?i)\Aüber`, false, true},
		{`\w+`, false, false},
		{`a|\d`, false, false},
		{`(?i)x*`, false, false},
		{"\uFFFD", false, false},
		{`a|b|c|d|e|f`, false, false}, // more pivot bytes than scanned for
	} {
		sr, err := compileSearch(c.pattern, c.ignoreCase, false)
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		if got := sr.pre != nil; got != c.want {
			t.Errorf("%q (ignore case %v): prefilter %v, want %v", c.pattern, c.ignoreCase, got, c.want)
		}
	}
}

// TestPrefilterFolds: the literal is found in every case variant, including
// those of other byte lengths (the Kelvin sign, the long s), and not in
// near misses.
func TestPrefilterFolds(t *testing.T) {
	sr, err := compileSearch(`(?i)kiss`, false, false)
	if err != nil || sr.pre == nil {
		t.Fatalf("no prefilter: %v", err)
	}
	for text, want := range map[string]bool{
		"a KISS":               true,
		"\u212aiss":            true,
		"ki\u017fS.":           true,
		"x\u212aI\u017f\u017f": true,
		"kis":                  false,
		"k iss":                false,
		"\xe2\x84kiss":         true,
		"kis\xc5":              false,
	} {
		s := sr.pre.scan()
		if got := s.find([]byte(text), 0) >= 0; got != want {
			t.Errorf("%q: found %v, want %v", text, got, want)
		}
	}
}
