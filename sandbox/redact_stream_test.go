package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

// chunkWriter records what it is given, copying (writers must not retain).
type chunkWriter struct{ bytes.Buffer }

// streamRedact writes chunks through a redactWriter and returns what came
// out, checking after every write that what came out so far is a prefix of
// the whole redacted text.
func streamRedact(t *testing.T, r *redactor, want string, chunks ...string) string {
	t.Helper()
	var out chunkWriter
	rw := r.writer(&out)
	for _, c := range chunks {
		if n, err := rw.Write([]byte(c)); n != len(c) || err != nil {
			t.Fatalf("write %q: %d, %v", c, n, err)
		}
		if !strings.HasPrefix(want, out.String()) {
			t.Fatalf("after %q: wrote %q, not a prefix of %q", c, out.String(), want)
		}
	}
	if err := rw.flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestRedactWriterEverySplit: the stream, cut into two writes at every
// byte, into one-byte writes and into random pieces, comes out exactly as
// the whole text redacted at once — a secret cut by a write boundary is
// redacted whole, never partly written.
func TestRedactWriterEverySplit(t *testing.T) {
	r, err := compileRedactor(RedactPolicy{
		Env: []string{"S1", "S2"},
		Patterns: []string{
			`ghp_[A-Za-z0-9]{36}`, // bounded, with a literal start
			`tok_\w+`,             // unbounded
			`(?i)key-[a-z]{6}`,    // no literal start (case folding)
			`[0-9]{3}-[0-9]{4}\b`, // no literal start, an end assertion
		},
	}, func(name string) []string {
		return map[string][]string{"S1": {"s3cr3t-value-42"}, "S2": {"s3cr3t"}}[name]
	})
	if err != nil {
		t.Fatal(err)
	}
	gh := "ghp_" + strings.Repeat("aB3", 12)
	inputs := []string{
		"s3cr3t-value-42",
		"x s3cr3t-value-4 s3cr3t-value-42 y",
		"a " + gh + " b " + gh + gh,
		"tok_abcdef, tok_" + strings.Repeat("z", 300) + "\nend",
		"KEY-abcdef key-ABCDEF kEy-abcdeg!",
		"call 555-1234 or 555-12345 or 555-1234",
		"s3cr3t s3cr3" + "t-value-42" + gh[:10],
		strings.Repeat("s3cr", 50) + "3t",
		"no secrets at all\n",
	}
	for _, in := range inputs {
		want := r.re.ReplaceAllLiteralString(in, Redacted)
		for i := 0; i <= len(in); i++ {
			if got := streamRedact(t, r, want, in[:i], in[i:]); got != want {
				t.Fatalf("%q split at %d: %q, want %q", in, i, got, want)
			}
		}
		bytesOf := strings.Split(in, "")
		if got := streamRedact(t, r, want, bytesOf...); got != want {
			t.Fatalf("%q byte by byte: %q, want %q", in, got, want)
		}
		rnd := rand.New(rand.NewPCG(1, uint64(len(in))))
		for range 50 {
			var chunks []string
			for rest := in; rest != ""; {
				n := min(len(rest), 1+rnd.IntN(8))
				chunks, rest = append(chunks, rest[:n]), rest[n:]
			}
			if got := streamRedact(t, r, want, chunks...); got != want {
				t.Fatalf("%q in %q: %q, want %q", in, chunks, got, want)
			}
		}
	}
}

// TestRedactWriterHoldsOnlyPossibleStarts: text that cannot start a
// secret is written at once (a live view does not lag); a possible start
// of one is held until it is decided.
func TestRedactWriterHoldsOnlyPossibleStarts(t *testing.T) {
	r, err := compileRedactor(RedactPolicy{Env: []string{"S"}, Patterns: []string{`ghp_[a-z]{4}`}},
		func(string) []string { return []string{"secret-1"} })
	if err != nil {
		t.Fatal(err)
	}
	var out chunkWriter
	rw := r.writer(&out)
	rw.Write([]byte("hello world\nsecr"))
	if got := out.String(); got != "hello world\n" {
		t.Errorf("after a possible start: %q", got)
	}
	rw.Write([]byte("ecy gh"))
	if got := out.String(); got != "hello world\nsecrecy " {
		t.Errorf("after the start was decided: %q", got)
	}
	rw.Write([]byte("p_abcd!"))
	if got := out.String(); got != "hello world\nsecrecy [REDACTED]!" {
		t.Errorf("after a pattern match: %q", got)
	}
	rw.Write([]byte(" ghp_ab"))
	rw.flush()
	if got := out.String(); got != "hello world\nsecrecy [REDACTED]! ghp_ab" {
		t.Errorf("after flush: %q", got)
	}
}

func TestMaxMatchLen(t *testing.T) {
	for _, c := range []struct {
		pat     string
		n       int
		bounded bool
	}{
		{`ghp_[A-Za-z0-9]{36}`, 40, true},
		{`a|bcd`, 3, true},
		{`x?y{2,5}`, 6, true},
		{`é`, 2, true},
		{`(?i)k`, 3, true}, // the Kelvin sign
		{`.`, 4, true},
		{`^a$`, 1, true},
		{`a+`, 0, false},
		{`a{2,}`, 0, false},
	} {
		n, ok := -1, false
		if s := streamStarts(nil, []string{c.pat}); len(s) == 1 {
			n, ok = s[0].maxLen, !s[0].unbounded
		}
		if ok != c.bounded || (ok && n != c.n) {
			t.Errorf("%s: %d %v, want %d %v", c.pat, n, ok, c.n, c.bounded)
		}
	}
}

// leaks reports the first 8-byte piece of secret found in s.
func leaks(s, secret string) string {
	for i := 0; i+8 <= len(secret); i++ {
		if strings.Contains(s, secret[i:i+8]) {
			return secret[i : i+8]
		}
	}
	return ""
}

// TestRedactionBeforeTruncation is issue 17's reproduction: a token printed
// just before 51164 bytes, so that bash's 50 KB tail window cuts it, and a
// token written in two pieces a moment apart. No piece of it may appear in
// the text, the details (truncation.content), the structured content, a
// streamed partial result or the full-output spill file.
func TestRedactionBeforeTruncation(t *testing.T) {
	token := "ghp_" + "Zq7Xw2Lm9Pk4Rt6Yv8Nb1Hc3Jd5Fg0Se2Ua4"
	t.Setenv("PI_TEST_GH_TOKEN", token)
	policies := map[string]Policy{
		"env":     {Redact: RedactPolicy{Env: []string{"PI_TEST_GH_TOKEN"}}},
		"pattern": {Redact: RedactPolicy{Patterns: []string{`ghp_[A-Za-z0-9]{36}`}}},
	}
	// The command; with 51190 bytes the output redacted is still
	// over 50 KB (the window cuts "[REDACTED]"), while unredacted the window
	// kept the token's last 9 bytes.
	commands := map[string]struct{ cmd, text string }{
		"issue":      {`printf %s "$PI_TEST_GH_TOKEN"; head -c 51164 /dev/zero; echo`, ""},
		"window cut": {`printf %s "$PI_TEST_GH_TOKEN"; head -c 51190 /dev/zero; echo`, ""},
		"two pieces": {`s=$PI_TEST_GH_TOKEN; printf %s "$(printf %s "$s" | cut -c1-20)"; sleep 0.3; printf '%s\n' "$(printf %s "$s" | cut -c21-)"`, "[REDACTED]\n"},
	}
	for pname, p := range policies {
		for cname, c := range commands {
			t.Run(pname+"/"+cname, func(t *testing.T) {
				_, l, _ := openPolicy(t, p)
				var seen []string
				b := l.RunBatch(context.Background(), nil, []loop.ToolCall{{ID: "b", Name: "bash", Arguments: json.RawMessage(bashArgs(c.cmd))}}, func(ev loop.Event) {
					if u, ok := ev.(loop.ToolExecutionUpdate); ok {
						d, _ := json.Marshal(u.PartialResult.Details)
						seen = append(seen, "partial: "+text(u.PartialResult)+string(d))
					}
				})
				res := b.Results[0].Result
				if res.IsError {
					t.Fatalf("bash: %s", text(res))
				}
				d, _ := json.Marshal(res.Details)
				sc, _ := json.Marshal(res.StructuredContent)
				seen = append(seen, "text: "+text(res), "details: "+string(d), "structured: "+string(sc))
				var details struct {
					FullOutputPath string `json:"fullOutputPath"`
				}
				json.Unmarshal(d, &details)
				if details.FullOutputPath != "" {
					full, err := os.ReadFile(details.FullOutputPath)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.HasPrefix(full, []byte(Redacted)) {
						t.Errorf("spill file starts %q, want %q", full[:min(len(full), 20)], Redacted)
					}
					seen = append(seen, "spill file: "+string(full))
				} else if cname == "window cut" {
					t.Fatalf("no full output file: details %s", d)
				}
				for _, s := range seen {
					if piece := leaks(s, token); piece != "" {
						where, _, _ := strings.Cut(s, ":")
						t.Errorf("%s has %q of the token", where, piece)
					}
				}
				if c.text != "" && text(res) != c.text {
					t.Errorf("text %q, want %q", text(res), c.text)
				}
			})
		}
	}
}
