package search

import (
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// regexCorpus mixes scripts, digits, spaces and punctuation where Unicode
// and ASCII readings of the Perl classes differ.
var regexCorpus = strings.Join([]string{
	"plain ascii words 123",
	"café naïve résumé",
	"Ελληνικά κείμενο",
	"русский текст 42",
	"日本語のテキスト",
	"arabic digits ٣٤٥ and hindi १२३",
	"nbsp\u00a0here and\u2003emspace",
	"tab\tseparated\tvalues",
	"under_score and-dash",
	"ÉCOLE école Straße STRASSE",
	"KELVIN \u212a sign",
	"x\u0301 combining mark",
	"emoji 🙂 end",
	"ſ long s",
	"",
	"trailing space ",
	"mixed123abc ٣x",
	"Über über ÜBER überall",
	"func NewReader(r io.Reader) *Reader",
	"FUNC newreader",
	"xyzzy_NoMatch? no: xyzzy nomatch",
	"STRAẞE ſtraße",
}, "\n") + "\n"

var regexPatterns = []string{
	`\d+`, `\D+`, `^\w+$`, `\w+`, `\W`, `\s`, `\S+\s\S+`, `[\d]`, `[^\d\s]+`, `[\w-]+`, `[\W]`, `[\S]`,
	`\bé`, `é\b`, `\bcole\b`, `\B\w\b`, `\b\d+\b`, `\bκ`, `т\b`, `^\b`, `\b$`, `x\b`, `\Bx`,
	`(?i)école`, `(?i)strasse`, `(?i)k`, `(?i)s`, `[[:alpha:]]+`, `[[:digit:]]`, `\pL+`, `\p{Greek}+`,
	`^$`, `^.{4}$`, `a|b`, `(ab|cd)+`, `\x{212a}`, `[α-ω]+`, `\.`, `e\s*$`,
	// Required literals, found through the case-folded prefilter.
	`ÜBER|straße`, `(?i)über`, `(?i)func newreader`, `(?i)xyzzy_nomatch`, `func NewReader`, `(?i)\x{212a}elvin`,
	`(?i)strasse|ß`, `über\b`, `(?i)^über`, `(?i)new(reader|line)\b`, `(über|xyzzy)+`, `(?i)s\w*e`,
}

func TestRegexDialectAgainstRG(t *testing.T) {
	needTool(t, "rg")
	root := mkTree(t, map[string]string{"corpus.txt": regexCorpus})
	for _, p := range regexPatterns {
		for _, ic := range []bool{false, true} {
			q := ops.GrepQuery{Pattern: p, Path: root, IgnoreCase: ic}
			want, err := collectGrep(t, engineGrep, q)
			if err != nil {
				t.Errorf("%q: engine: %v", p, err)
				continue
			}
			got, err := collectGrep(t, rgGrep, q)
			if err != nil || !equal(got, want) {
				t.Errorf("%q ignoreCase=%v:\nengine %q\nrg     %q (%v)", p, ic, want, got, err)
			}
		}
	}
}

func TestTranslatePerlClasses(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`\d`, `\p{Nd}`},
		{`[\D]`, `[\P{Nd}]`},
		{`\\d`, `\\d`},
		{`\Q\d\E\d`, `\Q\d\E\p{Nd}`},
		{`[]\d]`, `[\]\p{Nd}]`},
		{`[[:alpha:]\d]`, `[[:alpha:]\p{Nd}]`},
	} {
		got, err := translatePerlClasses(c.in)
		if err != nil || got != c.want {
			t.Errorf("%q → %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestNFAWordBoundary(t *testing.T) {
	m, err := compilePattern(`\bété\b`, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]bool{"été": true, "un été chaud": true, "étés": false, "xété": false, "été_": false, "été-": true} {
		if got := m.Match([]byte(line)); got != want {
			t.Errorf("%q: %v, want %v", line, got, want)
		}
	}
}
