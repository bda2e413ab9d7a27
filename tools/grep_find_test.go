package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

// searchEnv is a memfs workspace at /work, a git repository with ignore
// rules, hidden files and a nested directory.
func searchEnv(t *testing.T) *memfs.FS {
	t.Helper()
	m := memfs.New()
	for name, content := range map[string]string{
		"/work/.git/HEAD":     "ref: refs/heads/main\n",
		"/work/.gitignore":    "*.log\n",
		"/work/a.txt":         "hello world\nfoo\nHello again\n",
		"/work/debug.log":     "hello log\n",
		"/work/.env":          "hello hidden\n",
		"/work/src/main.ts":   "const x = 1; // hello\n",
		"/work/src/util.ts":   "export {}\n",
		"/work/pkg/src/b.ts":  "b\n",
		"/work/docs/READ.MD":  "# hello\n",
		"/work/ctx.txt":       "1\n2\nhit\n4\n5\n6\n7\nhit\n9\n",
		"/work/bad-utf8.txt":  "hello \xff\xfe end\n",
		"/work/crlf.txt":      "hello\r\n",
		"/work/empty/.keep":   "",
		"/home/user/notes.md": "hello home\n",
	} {
		addFile(t, m, name, content)
	}
	return m
}

func execTool(t *testing.T, tool loop.Tool, args map[string]any) (string, string, error) {
	t.Helper()
	res, err := tool.Execute(context.Background(), "c1", args, nil)
	if err != nil {
		return "", "", err
	}
	d := ""
	if res.Details != nil {
		b, _ := loop.MarshalNoEscape(res.Details)
		d = string(b)
	}
	return res.Content[0].Text, d, nil
}

func TestGrepTool(t *testing.T) {
	m := searchEnv(t)
	tool := NewGrep(m, m.Info())
	cases := []struct {
		name    string
		args    map[string]any
		text    string
		details string
	}{
		{"dir", map[string]any{"pattern": "hello"},
			".env:1: hello hidden\na.txt:1: hello world\nbad-utf8.txt:1: hello \uFFFD\uFFFD end\ncrlf.txt:1: hello\ndocs/READ.MD:1: # hello\nsrc/main.ts:1: const x = 1; // hello", ""},
		{"ignore-case-glob", map[string]any{"pattern": "HELLO", "ignoreCase": true, "glob": "./*.txt"},
			"a.txt:1: hello world\na.txt:3: Hello again\nbad-utf8.txt:1: hello \uFFFD\uFFFD end\ncrlf.txt:1: hello", ""},
		{"file", map[string]any{"pattern": "hello", "path": "src/main.ts"}, "main.ts:1: const x = 1; // hello", ""},
		{"home", map[string]any{"pattern": "hello", "path": "~"}, "notes.md:1: hello home", ""},
		{"context", map[string]any{"pattern": "hit", "path": "ctx.txt", "context": 2.7},
			"ctx.txt-1- 1\nctx.txt-2- 2\nctx.txt:3: hit\nctx.txt-4- 4\nctx.txt-5- 5\nctx.txt-6- 6\nctx.txt-7- 7\nctx.txt:8: hit\nctx.txt-9- 9", ""},
		{"exact-limit", map[string]any{"pattern": "hit", "path": "ctx.txt", "limit": 2}, "ctx.txt:3: hit\nctx.txt:8: hit", ""},
		{"limit", map[string]any{"pattern": "hit", "path": "ctx.txt", "limit": 1, "context": 1},
			"ctx.txt-2- 2\nctx.txt:3: hit\nctx.txt-4- 4\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern]",
			`{"matchLimitReached":1}`},
		{"limit-clamped", map[string]any{"pattern": "hit", "path": "ctx.txt", "limit": 0.5},
			"ctx.txt:3: hit\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern]",
			`{"matchLimitReached":1}`},
		{"literal", map[string]any{"pattern": "x = 1;", "literal": true}, "src/main.ts:1: const x = 1; // hello", ""},
		{"none", map[string]any{"pattern": "zzz"}, "No matches found", ""},
		{"flag-like", map[string]any{"pattern": "--foo"}, "No matches found", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, details, err := execTool(t, tool, c.args)
			if err != nil {
				t.Fatal(err)
			}
			if text != c.text || details != c.details {
				t.Errorf("text\n%q\ndetails %s\nwant\n%q\ndetails %s", text, details, c.text, c.details)
			}
		})
	}
}

func TestGrepToolErrors(t *testing.T) {
	m := searchEnv(t)
	tool := NewGrep(m, m.Info())
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"pattern": "x", "path": "nope"}, "Path not found: /work/nope"},
		{map[string]any{"pattern": "(x"}, "regex parse error: missing closing ): `(x`"},
		{map[string]any{"pattern": "x", "glob": "[a"}, "error parsing glob '[a': unclosed character class; missing ']'"},
	} {
		_, _, err := execTool(t, tool, c.args)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v: err = %v, want %q", c.args, err, c.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tool.Execute(ctx, "c1", map[string]any{"pattern": "x"}, nil); err == nil || err.Error() != "Operation aborted" {
		t.Errorf("aborted: %v", err)
	}
}

func TestGrepToolTruncation(t *testing.T) {
	m := memfs.New()
	long := strings.Repeat("é", 600)
	var b strings.Builder
	for i := 0; i < 150; i++ {
		fmt.Fprintf(&b, "match %s\n", long)
	}
	addFile(t, m, "/work/big.txt", b.String())
	tool := NewGrep(m, m.Info())
	text, details, err := execTool(t, tool, map[string]any{"pattern": "match", "limit": 120})
	if err != nil {
		t.Fatal(err)
	}
	line := "big.txt:1: match " + strings.Repeat("é", 494) + "... [truncated]"
	if !strings.HasPrefix(text, line+"\n") {
		t.Fatalf("first line: %q", text[:200])
	}
	// The byte cap cut the output: pi's count notice loses its "Use limit"
	// hint, and the advice says what helps.
	const notice = "\n\n[120 matches limit reached. 50.0KB limit reached. Only the first 50 lines fit: a larger limit shows no more, refine pattern or narrow path or glob. Some lines truncated to 500 chars. Use read tool to see full lines]"
	if !strings.HasSuffix(text, notice) {
		t.Fatalf("notice: %q", text[len(text)-300:])
	}
	var d struct {
		MatchLimitReached int  `json:"matchLimitReached"`
		LinesTruncated    bool `json:"linesTruncated"`
		Truncation        struct {
			TruncatedBy string `json:"truncatedBy"`
			TotalLines  int    `json:"totalLines"`
			OutputLines int    `json:"outputLines"`
			MaxLines    int64  `json:"maxLines"`
			MaxBytes    int    `json:"maxBytes"`
		} `json:"truncation"`
	}
	if err := json.Unmarshal([]byte(details), &d); err != nil {
		t.Fatal(err)
	}
	tr := d.Truncation
	if d.MatchLimitReached != 120 || !d.LinesTruncated || tr.TruncatedBy != "bytes" || tr.TotalLines != 120 ||
		tr.MaxLines != 1<<53-1 || tr.MaxBytes != 51200 || tr.OutputLines != 51200/len(line+"\n") {
		t.Fatalf("details %s", details)
	}
}

func TestFindTool(t *testing.T) {
	m := searchEnv(t)
	tool := NewFind(m, m.Info())
	cases := []struct {
		name    string
		args    map[string]any
		text    string
		details string
	}{
		{"name", map[string]any{"pattern": "*.ts"}, "pkg/src/b.ts\nsrc/main.ts\nsrc/util.ts", ""},
		{"anchored", map[string]any{"pattern": "./src/*.ts"}, "src/main.ts\nsrc/util.ts", ""},
		{"anchored-any", map[string]any{"pattern": "**/src/*.ts"}, "pkg/src/b.ts\nsrc/main.ts\nsrc/util.ts", ""},
		{"smart-case", map[string]any{"pattern": "*.md"}, "docs/READ.MD", ""},
		{"smart-case-upper", map[string]any{"pattern": "*.Md"}, "No files found matching pattern", ""},
		{"dirs-and-hidden", map[string]any{"pattern": "*", "path": "/work/src"}, "main.ts\nutil.ts", ""},
		{"hidden", map[string]any{"pattern": ".*"}, ".env\n.gitignore\nempty/.keep", ""},
		{"dirs", map[string]any{"pattern": "*src*"}, "pkg/src/\nsrc/", ""},
		{"ignored", map[string]any{"pattern": "*.log"}, "No files found matching pattern", ""},
		{"limit", map[string]any{"pattern": "*.ts", "limit": 2},
			"pkg/src/b.ts\nsrc/main.ts\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]",
			`{"resultLimitReached":2}`},
		{"exact-limit", map[string]any{"pattern": "*.ts", "limit": 3}, "pkg/src/b.ts\nsrc/main.ts\nsrc/util.ts", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, details, err := execTool(t, tool, c.args)
			if err != nil {
				t.Fatal(err)
			}
			if text != c.text || details != c.details {
				t.Errorf("text\n%q\ndetails %s\nwant\n%q\ndetails %s", text, details, c.text, c.details)
			}
		})
	}
}

func TestFindToolErrors(t *testing.T) {
	m := searchEnv(t)
	tool := NewFind(m, m.Info())
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"pattern": "*", "path": "nope"}, "Path not found: /work/nope"},
		{map[string]any{"pattern": "*", "path": "a.txt"}, "[fd error]: Search path '/work/a.txt' is not a directory.\n[fd error]: No valid search paths given."},
		{map[string]any{"pattern": "[a"}, "[fd error]: error parsing glob '[a': unclosed character class; missing ']'"},
	} {
		_, _, err := execTool(t, tool, c.args)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v: err = %v, want %q", c.args, err, c.want)
		}
	}
}

func TestFindToolByteTruncation(t *testing.T) {
	m := memfs.New()
	for i := 0; i < 600; i++ {
		addFile(t, m, fmt.Sprintf("/work/%s%04d.txt", strings.Repeat("n", 90), i), "")
	}
	text, details, err := execTool(t, NewFind(m, m.Info()), map[string]any{"pattern": "*.txt"})
	if err != nil {
		t.Fatal(err)
	}
	const advice = "Only the first 517 results fit: a larger limit shows no more, refine pattern or narrow path]"
	// The byte cap alone: pi's text.
	if !strings.HasSuffix(text, "\n\n[50.0KB limit reached]") || !strings.Contains(details, `"truncatedBy":"bytes"`) ||
		strings.Contains(details, "resultLimitReached") {
		t.Fatalf("text tail %q details %.200s", text[len(text)-80:], details)
	}
	// Both caps: no "Use limit" hint but the advice; above the count, pi's text.
	for _, limit := range []int{550, 1100} {
		text, details, err = execTool(t, NewFind(m, m.Info()), map[string]any{"pattern": "*.txt", "limit": limit})
		if err != nil {
			t.Fatal(err)
		}
		want := "\n\n[50.0KB limit reached]"
		if limit < 600 {
			want = "\n\n[550 results limit reached. 50.0KB limit reached. " + advice
		}
		if !strings.HasSuffix(text, want) || strings.Contains(text, "Use limit") {
			t.Errorf("limit %d: text tail %q details %.80s", limit, text[len(text)-160:], details)
		}
	}
	// The count alone: pi's text.
	text, _, err = execTool(t, NewFind(m, m.Info()), map[string]any{"pattern": "*.txt", "limit": 3})
	if err != nil || !strings.HasSuffix(text, "0002.txt\n\n[3 results limit reached. Use limit=6 for more, or refine pattern]") {
		t.Errorf("count notice: %q, %v", text, err)
	}
}
