package integration

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"regexp"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// parityCase is one tool call and its expected result. want may use
// {{cwd}}; match, when set, replaces the exact comparison (the spill path
// differs per backend). check inspects details and side effects.
type parityCase struct {
	name      string
	tool      string
	args      string
	want      string
	match     *regexp.Regexp
	isError   bool
	sortLines bool // result order across files is not defined (rg, fd)
	check     func(p *parityRun, res *loop.Result)
}

// setupParityFixtures creates the files the cases use in the working
// directory, through the backend.
func setupParityFixtures(t *testing.T, ctx context.Context, b ops.Backend) {
	t.Helper()
	var big strings.Builder
	for i := 1; i <= 2500; i++ {
		if i > 1 {
			big.WriteByte('\n')
		}
		fmt.Fprintf(&big, "Line %d", i)
	}
	files := map[string]string{
		"plain.txt":        "alpha\nbeta\ngamma\n",
		"five.txt":         "l1\nl2\nl3\nl4\nl5\n",
		"big.txt":          big.String(),
		"sub/keep.txt":     "x\n",
		"pic.dat":          string(tinyPNG(t)),
		"fake.png":         "not an image\n",
		"edit.txt":         "Hello, world!",
		"notfound.txt":     "abc\n",
		"dup.txt":          "x = 1\nx = 1\n",
		"crlf.txt":         "first\r\nsecond\r\nthird\r\n",
		"g/a.txt":          "one\ntwo\nthree\nfour\nfive\n",
		"g/many.txt":       "m1 match\nm2 match\nm3 match\nm4 match\n",
		"repo/.gitignore":  "ignored.txt\n",
		"repo/ignored.txt": "needle\n",
		"repo/kept.txt":    "needle\n",
		"repo/.hidden":     "needle\n",
		"repo/.git/HEAD":   "ref: refs/heads/main\n",
		"f/src/a.ts":       "",
		"f/pkg/src/b.ts":   "",
		"f/README.MD":      "",
		"f/notes.md":       "",
		"f/Upper.md":       "",
		"f/dir/inner.txt":  "",
		"l/_under":         "",
		"l/-dash":          "",
		"l/.dot":           "",
		"l/.hdir/x":        "",
		"l/~tilde":         "",
		"l/1num":           "",
		"l/ä-umlaut":       "",
		"l/a.txt":          "",
		"l/b.txt":          "",
		"l/B2.txt":         "",
		"l/subdir/x":       "",
		"l/Zeta":           "",
	}
	for name, data := range files {
		writeSetup(t, ctx, b, name, data)
	}
	runSetup(t, ctx, b, "ln -s nowhere l/broken && ln -s subdir l/linkdir")
}

func tinyPNG(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func parityCases() []parityCase {
	return []parityCase{
		// §4.1 read
		{name: "read/plain", tool: "read", args: `{"path":"plain.txt"}`, want: "alpha\nbeta\ngamma\n"},
		{name: "read/offset-limit", tool: "read", args: `{"path":"five.txt","offset":2,"limit":2}`,
			want: "l2\nl3\n\n[3 more lines in file. Use offset=4 to continue.]"},
		{name: "read/absolute", tool: "read", args: `{"path":"{{cwd}}/plain.txt","limit":1}`,
			want: "alpha\n\n[3 more lines in file. Use offset=2 to continue.]"},
		{name: "read/beyond-end", tool: "read", args: `{"path":"plain.txt","offset":9}`,
			want: "Offset 9 is beyond end of file (4 lines total)", isError: true},
		{name: "read/truncated-lines", tool: "read", args: `{"path":"big.txt"}`,
			match: regexp.MustCompile(`\ALine 1\nLine 2\n(?s:.*)\nLine 2000\n\n\[Showing lines 1-2000 of 2500\. Use offset=2001 to continue\.\]\z`),
			check: func(p *parityRun, res *loop.Result) {
				tr, _ := p.details(res)["truncation"].(map[string]any)
				if tr["truncated"] != true || tr["truncatedBy"] != "lines" || tr["totalLines"] != 2500.0 || tr["outputLines"] != 2000.0 {
					p.t.Errorf("truncation details %v", tr)
				}
			}},
		{name: "read/enoent", tool: "read", args: `{"path":"nope.txt"}`,
			want: "ENOENT: no such file or directory, access '{{cwd}}/nope.txt'", isError: true},
		{name: "read/eisdir", tool: "read", args: `{"path":"sub"}`,
			want: "EISDIR: illegal operation on a directory, read", isError: true},
		{name: "read/image-magic", tool: "read", args: `{"path":"pic.dat"}`,
			want: "Read image file [image/png]|<image image/png>",
			check: func(p *parityRun, res *loop.Result) {
				if len(res.Content) != 2 || res.Content[1].Data == "" {
					p.t.Errorf("image content %+v", res.Content)
				}
			}},
		{name: "read/png-name-text", tool: "read", args: `{"path":"fake.png"}`, want: "not an image\n"},

		// §4.2 write
		{name: "write/parents", tool: "write", args: `{"path":"new/deep/file.txt","content":"hi\n"}`,
			want: "Successfully wrote to new/deep/file.txt",
			check: func(p *parityRun, res *loop.Result) {
				if got := p.readFile("new/deep/file.txt"); got != "hi\n" {
					p.t.Errorf("written file %q", got)
				}
				if res.Details != nil {
					p.t.Errorf("details %v, want none", res.Details)
				}
			}},

		// §4.3 edit
		{name: "edit/success", tool: "edit", args: `{"path":"edit.txt","edits":[{"oldText":"world","newText":"testing"}]}`,
			want: "Successfully replaced 1 block(s) in edit.txt.",
			check: func(p *parityRun, res *loop.Result) {
				d := p.details(res)
				wantPatch := "--- edit.txt\n+++ edit.txt\n@@ -1,1 +1,1 @@\n-Hello, world!\n\\ No newline at end of file\n+Hello, testing!\n\\ No newline at end of file\n"
				if d["diff"] != "-1 Hello, world!\n+1 Hello, testing!" || d["patch"] != wantPatch || d["firstChangedLine"] != 1.0 {
					p.t.Errorf("details %q", d)
				}
				if got := p.readFile("edit.txt"); got != "Hello, testing!" {
					p.t.Errorf("edited file %q", got)
				}
			}},
		{name: "edit/not-found", tool: "edit", args: `{"path":"notfound.txt","edits":[{"oldText":"zzz","newText":"y"}]}`,
			want: "Could not find the exact text in notfound.txt. The old text must match exactly including all whitespace and newlines.", isError: true},
		{name: "edit/duplicate", tool: "edit", args: `{"path":"dup.txt","edits":[{"oldText":"x = 1","newText":"x = 2"}]}`,
			want: "Found 2 occurrences of the text in dup.txt. The text must be unique. Please provide more context to make it unique.", isError: true},
		{name: "edit/crlf", tool: "edit", args: `{"path":"crlf.txt","edits":[{"oldText":"second\n","newText":"REPLACED\nNEW\n"}]}`,
			want: "Successfully replaced 1 block(s) in crlf.txt.",
			check: func(p *parityRun, res *loop.Result) {
				if got := p.readFile("crlf.txt"); got != "first\r\nREPLACED\r\nNEW\r\nthird\r\n" {
					p.t.Errorf("edited file %q", got)
				}
			}},

		// §4.4 bash
		{name: "bash/echo", tool: "bash", args: `{"command":"echo hello"}`, want: "hello\n"},
		{name: "bash/exit-3", tool: "bash", args: `{"command":"echo out; echo err >&2; exit 3"}`,
			want: "out\nerr\n\n\nCommand exited with code 3", isError: true},
		{name: "bash/kill-9", tool: "bash", args: `{"command":"kill -9 $$"}`,
			want: "(no output)\n\nCommand exited with code 137", isError: true},
		{name: "bash/timeout", tool: "bash", args: `{"command":"sleep 5","timeout":0.5}`,
			want: "Command timed out after 0.5 seconds", isError: true},
		{name: "bash/utf8", tool: "bash", args: `{"command":"printf 'h\\303\\251llo \\342\\234\\223 \\360\\237\\231\\202\\n'"}`,
			want: "héllo ✓ 🙂\n"},
		{name: "bash/truncated", tool: "bash", args: `{"command":"i=1; while [ $i -le 3000 ]; do echo $i; i=$((i+1)); done"}`,
			match: regexp.MustCompile(`\A1001\n1002\n(?s:.*)\n3000\n\n\[Showing lines 1001-3000 of 3000\. Full output: /[^\]]+\]\z`),
			check: func(p *parityRun, res *loop.Result) {
				d := p.details(res)
				tr, _ := d["truncation"].(map[string]any)
				if tr["truncated"] != true || tr["truncatedBy"] != "lines" || tr["totalLines"] != 3000.0 {
					p.t.Errorf("truncation details %v", tr)
				}
				path, _ := d["fullOutputPath"].(string)
				if path == "" || !strings.Contains(resultText(res), "Full output: "+path+"]") {
					p.t.Fatalf("fullOutputPath %q not in the notice", path)
				}
				// The spill file is readable with read on the same backend.
				r := p.call("read", fmt.Sprintf(`{"path":%q,"offset":2999,"limit":2}`, path))
				if got, want := resultText(r), "2999\n3000\n\n[1 more lines in file. Use offset=3001 to continue.]"; r.IsError || got != want {
					p.t.Errorf("read of the full output: %q (isError %v), want %q", got, r.IsError, want)
				}
			}},

		// §4.6 grep
		{name: "grep/context", tool: "grep", args: `{"pattern":"three","path":"g","context":1}`,
			want: "a.txt-2- two\na.txt:3: three\na.txt-4- four"},
		{name: "grep/limit", tool: "grep", args: `{"pattern":"match","path":"g/many.txt","limit":2}`,
			want: "many.txt:1: m1 match\nmany.txt:2: m2 match\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]",
			check: func(p *parityRun, res *loop.Result) {
				if d := p.details(res); d["matchLimitReached"] != 2.0 {
					p.t.Errorf("details %v", d)
				}
			}},
		{name: "grep/gitignore-hidden", tool: "grep", args: `{"pattern":"needle","path":"repo"}`,
			want: ".hidden:1: needle\nkept.txt:1: needle", sortLines: true},
		{name: "grep/no-match", tool: "grep", args: `{"pattern":"zzzz","path":"g"}`, want: "No matches found"},
		{name: "grep/missing-path", tool: "grep", args: `{"pattern":"x","path":"nope"}`,
			want: "Path not found: {{cwd}}/nope", isError: true},

		// §4.7 find
		{name: "find/anchored", tool: "find", args: `{"pattern":"src/*.ts","path":"f"}`, want: "src/a.ts"},
		{name: "find/any-depth", tool: "find", args: `{"pattern":"**/src/*.ts","path":"f"}`,
			want: "src/a.ts\npkg/src/b.ts", sortLines: true},
		{name: "find/smart-case-lower", tool: "find", args: `{"pattern":"*.md","path":"f"}`,
			want: "README.MD\nnotes.md\nUpper.md", sortLines: true},
		{name: "find/smart-case-upper", tool: "find", args: `{"pattern":"*.MD","path":"f"}`, want: "README.MD"},
		{name: "find/dir-slash", tool: "find", args: `{"pattern":"dir","path":"f"}`, want: "dir/"},
		{name: "find/none", tool: "find", args: `{"pattern":"*.zzz","path":"f"}`, want: "No files found matching pattern"},

		// §4.8 ls
		{name: "ls/order-broken-link", tool: "ls", args: `{"path":"l"}`,
			want: "_under\n-dash\n.dot\n.hdir/\n~tilde\n1num\nä-umlaut\na.txt\nb.txt\nB2.txt\nlinkdir/\nsubdir/\nZeta"},
		{name: "ls/missing", tool: "ls", args: `{"path":"nope"}`, want: "Path not found: {{cwd}}/nope", isError: true},
		{name: "ls/not-dir", tool: "ls", args: `{"path":"plain.txt"}`, want: "Not a directory: {{cwd}}/plain.txt", isError: true},
	}
}
