package integration

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"regexp"
	"strings"
	"sync"
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
	volatile  bool // timing-dependent: match only, no comparison with local
	// abortOn cancels the call's context once its partial output holds
	// this text (the command is under way).
	abortOn string
	check   func(p *parityRun, res *loop.Result)
	// starved is what pi itself answers when a loaded machine paused the
	// command's writers, or the transport carrying their output, longer
	// than the exit grace: the call then ends early, as a success with the
	// output so far, or as a plain timeout when the shell did not run in
	// time. Such an attempt is tried again, up to three times; when all
	// three were starved the last must still be a well-formed answer whose
	// isError agrees with its text. That the grace is re-armed by output
	// until the timeout is each backend's conformance case
	// (opstest testTimeoutAfterShellExit), whose writer never pauses.
	starved *regexp.Regexp
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
		"plain.txt":             "alpha\nbeta\ngamma\n",
		"five.txt":              "l1\nl2\nl3\nl4\nl5\n",
		"big.txt":               big.String(),
		"sub/keep.txt":          "x\n",
		"pic.dat":               string(tinyPNG(t)),
		"pic.bmp.bin":           string(tinyBMP()),
		"photo":                 string(tinyJPEG(t)),
		"fake.png":              "not an image\n",
		"edit.txt":              "Hello, world!",
		"notfound.txt":          "abc\n",
		"dup.txt":               "x = 1\nx = 1\n",
		"crlf.txt":              "first\r\nsecond\r\nthird\r\n",
		"g/a.txt":               "one\ntwo\nthree\nfour\nfive\n",
		"g/many.txt":            "m1 match\nm2 match\nm3 match\nm4 match\n",
		"repo/.gitignore":       "ignored.txt\n",
		"repo/ignored.txt":      "needle\n",
		"repo/kept.txt":         "needle\n",
		"repo/.hidden":          "needle\n",
		"repo/.git/HEAD":        "ref: refs/heads/main\n",
		"f/src/a.ts":            "",
		"f/pkg/src/b.ts":        "",
		"f/README.MD":           "",
		"f/notes.md":            "",
		"f/Upper.md":            "",
		"f/dir/inner.txt":       "",
		"l/_under":              "",
		"l/-dash":               "",
		"l/.dot":                "",
		"l/.hdir/x":             "",
		"l/~tilde":              "",
		"l/1num":                "",
		"l/ä-umlaut":            "",
		"l/a.txt":               "",
		"l/b.txt":               "",
		"l/B2.txt":              "",
		"l/subdir/x":            "",
		"l/Zeta":                "",
		"empty.txt":             "",
		"crlf-read.txt":         "a\r\nb\r\n",
		"bom.txt":               "\ufeffbom\n",
		"bad-utf8.txt":          "a\xffb\n",
		"longline.txt":          strings.Repeat("x", 60000) + "\nshort\n",
		"wide.txt":              strings.Repeat(strings.Repeat("w", 99)+"\n", 600),
		"bom-edit.txt":          "\ufeffkeep\nold\n",
		"fuzzy.txt":             "keep  \nconsole.log(\u2018hello\u2019);\nafter  \n",
		"multi.txt":             "aa\nbb\ncc\n",
		"afile":                 "plain\n",
		"g/long.txt":            strings.Repeat("y", 600) + " hit\n",
		"g/re.txt":              "a.c\nabc\n-flag\nUPPER hit\n",
		"g/sub/deep.go":         "hit in go\n",
		"g/sub/deep.ts":         "hit in ts\n",
		"f/node_modules/m/x.js": "",
		"f/.hid/h.md":           "",
		"e/.keep":               "",
		"many/1":                "",
		"many/2":                "",
		"many/3":                "",
		"many/4":                "",
		"q/a b.txt":             "z\n",
		"q/it's.txt":            "z\n",
		"q/$HOME.txt":           "z\n",
		"q/back\\slash.txt":     "z\n",
		"q/star*.txt":           "z\n",
		"q/-n.txt":              "z\n",
		"sym/target.txt":        "old\n",
		"sym/etarget.txt":       "old\n",
		"sym/script.sh":         "echo old\n",
		"bin/blob.dat":          "match\x00\x01\x02 match\n",
		"bin/text.txt":          "match\n",
		"g3/w.txt":              "1\nhit\n3\nhit\n5\n6\n7\n8\nhit\n",
		"huge.txt":              hugeText(),
		"huge-edit.txt":         hugeText(),
		"curly\u2019s.txt":      "curly\n",
	}
	// A few writers at once: each remote write is a round trip.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 6)
	for name, data := range files {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			writeSetup(t, ctx, b, name, data)
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	runSetup(t, ctx, b, "ln -s nowhere l/broken && ln -s subdir l/linkdir && ln -s dir f/linkdir && "+
		"ln -s target.txt sym/link.txt && ln -s etarget.txt sym/elink.txt && chmod 755 sym/script.sh && "+
		"mkdir g2 empty-dir && ln -s ../g/a.txt g2/link.txt && echo three > g2/own.txt")
}

// hugeText is a 3 MB file of numbered lines, for streaming reads.
func hugeText() string {
	var b strings.Builder
	for i := 1; i <= 300000; i++ {
		fmt.Fprintf(&b, "row %06d\n", i)
	}
	return b.String()
}

// tinyBMP is a 1×1 24-bit BMP.
func tinyBMP() []byte {
	b := []byte{'B', 'M', 58, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0, // file header
		40, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 24, 0, 0, 0, 0, 0, 4, 0, 0, 0, // info header
		0x13, 0x0b, 0, 0, 0x13, 0x0b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 255, 0} // one red pixel, row padded to 4 bytes
	return b
}

func tinyJPEG(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
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
		{name: "read/bmp-converted", tool: "read", args: `{"path":"pic.bmp.bin"}`,
			want: "Read image file [image/png]\n[Image converted from image/bmp to image/png.]|<image image/png>"},
		{name: "read/jpeg", tool: "read", args: `{"path":"photo"}`, want: "Read image file [image/jpeg]|<image image/jpeg>"},
		{name: "read/png-name-text", tool: "read", args: `{"path":"fake.png"}`, want: "not an image\n"},

		{name: "read/empty", tool: "read", args: `{"path":"empty.txt"}`, want: ""},
		{name: "read/phantom-line", tool: "read", args: `{"path":"plain.txt","offset":4}`, want: ""},
		{name: "read/crlf-bom-kept", tool: "read", args: `{"path":"crlf-read.txt"}`, want: "a\r\nb\r\n"},
		{name: "read/bom", tool: "read", args: `{"path":"bom.txt"}`, want: "\ufeffbom\n"},
		{name: "read/invalid-utf8", tool: "read", args: `{"path":"bad-utf8.txt"}`, want: "a\ufffdb\n"},
		{name: "read/at-prefix", tool: "read", args: `{"path":"@plain.txt","limit":1}`,
			want: "alpha\n\n[3 more lines in file. Use offset=2 to continue.]"},
		{name: "read/dotdot", tool: "read", args: `{"path":"sub/../plain.txt","offset":3,"limit":1}`,
			want: "gamma\n\n[1 more lines in file. Use offset=4 to continue.]"},
		{name: "read/long-first-line", tool: "read", args: `{"path":"longline.txt"}`,
			want: "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' longline.txt | head -c 51200]"},
		{name: "read/truncated-bytes", tool: "read", args: `{"path":"wide.txt"}`,
			want: strings.Repeat(strings.Repeat("w", 99)+"\n", 511) + strings.Repeat("w", 99) +
				"\n\n[Showing lines 1-512 of 601 (50.0KB limit). Use offset=513 to continue.]"},
		{name: "read/dir-symlink", tool: "read", args: `{"path":"l/linkdir"}`,
			want: "EISDIR: illegal operation on a directory, read", isError: true},
		{name: "read/broken-symlink", tool: "read", args: `{"path":"l/broken"}`,
			want: "ENOENT: no such file or directory, access '{{cwd}}/l/broken'", isError: true},

		{name: "read/limit-0", tool: "read", args: `{"path":"plain.txt","limit":0}`,
			want: "\n\n[4 more lines in file. Use offset=1 to continue.]"},
		{name: "read/huge-offset", tool: "read", args: `{"path":"huge.txt","offset":299999,"limit":1}`,
			want: "row 299999\n\n[2 more lines in file. Use offset=300000 to continue.]"},
		{name: "read/huge-truncated", tool: "read", args: `{"path":"huge.txt","offset":1000}`,
			want: strings.Join(strings.Split(hugeText(), "\n")[999:999+2000], "\n") +
				"\n\n[Showing lines 1000-2999 of 300001. Use offset=3000 to continue.]"},

		{name: "read/huge-beyond", tool: "read", args: `{"path":"huge.txt","offset":400000}`,
			want: "Offset 400000 is beyond end of file (300001 lines total)", isError: true},
		{name: "read/apostrophe-fallback", tool: "read", args: `{"path":"curly's.txt"}`, want: "curly\n"},

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

		{name: "write/overwrite-unicode", tool: "write", args: `{"path":"afile","content":"ünï ✓\r\n"}`,
			want: "Successfully wrote to afile",
			check: func(p *parityRun, res *loop.Result) {
				if got := p.readFile("afile"); got != "ünï ✓\r\n" {
					p.t.Errorf("written file %q", got)
				}
			}},
		{name: "write/parent-is-file", tool: "write", args: `{"path":"plain.txt/x","content":"y"}`,
			want: "EEXIST: file already exists, mkdir '{{cwd}}/plain.txt'", isError: true},
		{name: "write/onto-dir", tool: "write", args: `{"path":"sub","content":"y"}`,
			want: "EISDIR: illegal operation on a directory, open '{{cwd}}/sub'", isError: true},

		{name: "write/empty", tool: "write", args: `{"path":"empty-new.txt","content":""}`,
			want: "Successfully wrote to empty-new.txt",
			check: func(p *parityRun, res *loop.Result) {
				if got := p.readFile("empty-new.txt"); got != "" {
					p.t.Errorf("written file %q", got)
				}
			}},
		{name: "write/modes", tool: "bash", args: `{"command":"stat -c '%a %n' new/deep new/deep/file.txt afile"}`,
			want: "755 new/deep\n644 new/deep/file.txt\n644 afile\n"},
		{name: "write/through-symlink", tool: "write", args: `{"path":"sym/link.txt","content":"new\n"}`,
			want: "Successfully wrote to sym/link.txt",
			check: func(p *parityRun, res *loop.Result) {
				r := p.call("bash", `{"command":"cat sym/target.txt; test -L sym/link.txt && echo still-a-link"}`)
				if got := resultText(r); got != "new\nstill-a-link\n" {
					p.t.Errorf("after write through a symlink: %q", got)
				}
			}},
		{name: "write/quoting", tool: "write", args: `{"path":"qw/new $x 'q'.txt","content":"z\n"}`,
			want: "Successfully wrote to qw/new $x 'q'.txt",
			check: func(p *parityRun, res *loop.Result) {
				if got := p.readFile("qw/new $x 'q'.txt"); got != "z\n" {
					p.t.Errorf("written file %q", got)
				}
			}},

		{name: "write/large", tool: "write", args: fmt.Sprintf(`{"path":"large.txt","content":%q}`, strings.Repeat("0123456789abcdef", 300000/16)),
			want: "Successfully wrote to large.txt",
			check: func(p *parityRun, res *loop.Result) {
				if got := p.readFile("large.txt"); got != strings.Repeat("0123456789abcdef", 300000/16) {
					p.t.Errorf("written file has %d bytes", len(got))
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

		{name: "edit/missing-file", tool: "edit", args: `{"path":"nope.txt","edits":[{"oldText":"a","newText":"b"}]}`,
			want: "Could not edit file: nope.txt. Error code: ENOENT.", isError: true},
		{name: "edit/bom-kept", tool: "edit", args: `{"path":"bom-edit.txt","edits":[{"oldText":"old","newText":"new"}]}`,
			want: "Successfully replaced 1 block(s) in bom-edit.txt.",
			check: func(p *parityRun, res *loop.Result) {
				if got := p.readFile("bom-edit.txt"); got != "\ufeffkeep\nnew\n" {
					p.t.Errorf("edited file %q", got)
				}
			}},
		{name: "edit/fuzzy", tool: "edit", args: `{"path":"fuzzy.txt","edits":[{"oldText":"console.log('hello');","newText":"console.log('world');"}]}`,
			want: "Successfully replaced 1 block(s) in fuzzy.txt.",
			check: func(p *parityRun, res *loop.Result) {
				if got := p.readFile("fuzzy.txt"); got != "keep  \nconsole.log('world');\nafter  \n" {
					p.t.Errorf("edited file %q", got)
				}
			}},
		{name: "edit/multi", tool: "edit", args: `{"path":"multi.txt","edits":[{"oldText":"cc","newText":"CC"},{"oldText":"aa","newText":"AA"}]}`,
			want: "Successfully replaced 2 block(s) in multi.txt.",
			check: func(p *parityRun, res *loop.Result) {
				if got := p.readFile("multi.txt"); got != "AA\nbb\nCC\n" {
					p.t.Errorf("edited file %q", got)
				}
				if d := p.details(res); d["diff"] != "-1 aa\n+1 AA\n 2 bb\n-3 cc\n+3 CC" {
					p.t.Errorf("diff %q", d["diff"])
				}
			}},
		{name: "edit/huge", tool: "edit", args: `{"path":"huge-edit.txt","edits":[{"oldText":"row 150000\n","newText":"ROW\n"}]}`,
			want: "Successfully replaced 1 block(s) in huge-edit.txt.",
			check: func(p *parityRun, res *loop.Result) {
				d := p.details(res)
				if d["firstChangedLine"] != 150000.0 || !strings.Contains(d["diff"].(string), "-150000 row 150000\n+150000 ROW\n") {
					p.t.Errorf("firstChangedLine %v, diff %q", d["firstChangedLine"], d["diff"])
				}
				if got := p.readFile("huge-edit.txt"); got != strings.Replace(hugeText(), "row 150000\n", "ROW\n", 1) {
					p.t.Errorf("edited file: %d bytes", len(got))
				}
			}},
		{name: "edit/empty-edits", tool: "edit", args: `{"path":"multi.txt","edits":[]}`,
			want: "Edit tool input is invalid. edits must contain at least one replacement.", isError: true},

		{name: "edit/keeps-mode", tool: "edit", args: `{"path":"sym/script.sh","edits":[{"oldText":"old","newText":"new"}]}`,
			want: "Successfully replaced 1 block(s) in sym/script.sh.",
			check: func(p *parityRun, res *loop.Result) {
				r := p.call("bash", `{"command":"stat -c %a sym/script.sh; ./sym/script.sh"}`)
				if got := resultText(r); got != "755\nnew\n" {
					p.t.Errorf("after edit of an executable: %q", got)
				}
			}},
		{name: "edit/through-symlink", tool: "edit", args: `{"path":"sym/elink.txt","edits":[{"oldText":"old","newText":"new"}]}`,
			want: "Successfully replaced 1 block(s) in sym/elink.txt.",
			check: func(p *parityRun, res *loop.Result) {
				r := p.call("bash", `{"command":"cat sym/etarget.txt; test -L sym/elink.txt && echo still-a-link"}`)
				if got := resultText(r); got != "new\nstill-a-link\n" {
					p.t.Errorf("after edit through a symlink: %q", got)
				}
			}},
		{name: "read/quoting", tool: "read", args: `{"path":"q/it's.txt"}`, want: "z\n"},

		// §4.4 bash
		{name: "bash/echo", tool: "bash", args: `{"command":"echo hello"}`, want: "hello\n"},
		{name: "bash/exit-3", tool: "bash", args: `{"command":"echo out; echo err >&2; exit 3"}`,
			want: "out\nerr\n\n\nCommand exited with code 3", isError: true},
		{name: "bash/kill-9", tool: "bash", args: `{"command":"kill -9 $$"}`,
			want: "(no output)\n\nCommand exited with code 137", isError: true},
		{name: "bash/timeout", tool: "bash", args: `{"command":"sleep 16 & sleep 16","timeout":0.5}`,
			want: "Command timed out after 0.5 seconds", isError: true,
			check: func(p *parityRun, res *loop.Result) { p.noProcess("sleep 1", "6") }},
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

		{name: "bash/no-output", tool: "bash", args: `{"command":"true"}`, want: "(no output)"},
		{name: "bash/exit-1", tool: "bash", args: `{"command":"exit 1"}`, want: "(no output)\n\nCommand exited with code 1", isError: true},
		{name: "bash/pwd", tool: "bash", args: `{"command":"pwd"}`, want: "{{cwd}}\n"},
		{name: "bash/stderr-only", tool: "bash", args: `{"command":"echo e >&2"}`, want: "e\n"},
		{name: "bash/no-newline", tool: "bash", args: `{"command":"printf abc"}`, want: "abc"},
		{name: "bash/timeout-output", tool: "bash", args: `{"command":"echo started; sleep 9","timeout":2}`,
			want: "started\n\n\nCommand timed out after 2 seconds", isError: true},
		{name: "bash/background-exits", tool: "bash", args: `{"command":"(sleep 3 >/dev/null 2>&1 &); echo done"}`, want: "done\n"},
		{name: "bash/invalid-utf8", tool: "bash", args: `{"command":"printf 'a\\377b\\n'"}`, want: "a\ufffdb\n"},
		{name: "bash/long-line", tool: "bash", args: `{"command":"head -c 60000 /dev/zero | tr '\\0' x"}`,
			want: strings.Repeat("x", 51200) + "\n\n[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: $SPILL]"},
		{name: "bash/sigterm", tool: "bash", args: `{"command":"echo a; kill -TERM $$"}`,
			want: "a\n\n\nCommand exited with code 143", isError: true},
		{name: "bash/cr", tool: "bash", args: `{"command":"printf 'a\\rb\\r\\n'"}`, want: "a\rb\r\n"},
		{name: "bash/utf8-chunks", tool: "bash", args: `{"command":"awk 'BEGIN{for(i=0;i<30000;i++) printf \"é\"}'"}`,
			want: strings.Repeat("é", 25600) + "\n\n[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: $SPILL]"},
		{name: "bash/huge", tool: "bash", args: `{"command":"head -c 5000000 /dev/zero | tr '\\0' a"}`,
			want: strings.Repeat("a", 51200) + "\n\n[Showing last 50.0KB of line 1 (line is 4.8MB). Full output: $SPILL]",
			check: func(p *parityRun, res *loop.Result) {
				path, _ := p.details(res)["fullOutputPath"].(string)
				r := p.call("bash", fmt.Sprintf(`{"command":"wc -c < '%s' | tr -d ' '"}`, path))
				if got := resultText(r); got != "5000000\n" {
					p.t.Errorf("full output file size %q", got)
				}
			}},
		{name: "bash/background-silent", tool: "bash", args: `{"command":"sleep 3 & echo started","timeout":2}`, want: "started\n"},
		// Two writers tick every few hundred microseconds (a busy loop of
		// 500 between ticks left gaps over the 100 ms exit grace at load
		// 25; none at all flooded the exec fallback, whose kill then came
		// late). A machine can still stall them longer than the grace, and
		// the call then rightly ends early as it would in pi (a success
		// with the output so far, or a plain timeout when the shell itself
		// did not run in time): starved. On the exec fallback the kill at
		// the deadline is an exec of its own, which a loaded engine can
		// make later than the helper's 2 s limit on output after the exit:
		// the helper's note on it then shows too.
		{name: "bash/background-writing", tool: "bash", args: `{"command":"t() { while :; do echo tick; i=0; while [ $i -lt 20 ]; do i=$((i+1)); done; done; }; t & t & echo started","timeout":1}`,
			match:   regexp.MustCompile(`\A((tick|started)\n)+(\n\[pi-sandbox: processes this command left running kept writing 2s after it exited; they were killed\]\n)?(\n\[Showing lines \d+-\d+ of \d+\. Full output: [^\]\n]+\])?\n\nCommand timed out after 1 seconds\. The shell exited with code 0 after 0\.\d seconds, but background processes it started kept writing output until the timeout\.\z`),
			starved: regexp.MustCompile(`\A((tick|started)\n)*(\n*\[pi-sandbox: [^\]\n]*\])?(\n*\[Showing lines \d+-\d+ of \d+\. Full output: [^\]\n]+\])?(\n*Command timed out after 1 seconds)?\z`),
			isError: true, volatile: true},
		// The kill at the deadline must not let the shell run its next
		// command once its foreground child died (ops/shim kill sweep).
		{name: "bash/timeout-no-next-command", tool: "bash", args: `{"command":"for i in 1 2 3 4 5 6 7 8 9 10; do sleep 9 & done; sleep 9; echo after","timeout":0.5}`,
			want: "Command timed out after 0.5 seconds", isError: true},
		{name: "bash/interleave", tool: "bash", args: `{"command":"for i in 1 2 3 4 5; do echo o$i; echo e$i >&2; done"}`,
			want: "o1\ne1\no2\ne2\no3\ne3\no4\ne4\no5\ne5\n"},
		{name: "bash/timeout-zero", tool: "bash", args: `{"command":"echo x","timeout":0}`,
			want: "Invalid timeout: must be a finite number of seconds", isError: true},
		{name: "bash/aborted", tool: "bash", args: `{"command":"sleep 17 & echo started; sleep 17"}`, abortOn: "started",
			want: "started\n\n\nCommand aborted", isError: true,
			check: func(p *parityRun, res *loop.Result) { p.noProcess("sleep 1", "7") }},
		{name: "bash/stdin-closed", tool: "bash", args: `{"command":"cat; echo rc=$?"}`, want: "rc=0\n"},

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

		{name: "grep/default-path", tool: "grep", args: `{"pattern":"needle"}`,
			want: "repo/.hidden:1: needle\nrepo/kept.txt:1: needle", sortLines: true},
		{name: "grep/file-target", tool: "grep", args: `{"pattern":"three","path":"g/a.txt"}`, want: "a.txt:3: three"},
		{name: "grep/ignore-case", tool: "grep", args: `{"pattern":"upper","path":"g/re.txt","ignoreCase":true}`, want: "re.txt:4: UPPER hit"},
		{name: "grep/literal", tool: "grep", args: `{"pattern":"a.c","path":"g/re.txt","literal":true}`, want: "re.txt:1: a.c"},
		{name: "grep/regex", tool: "grep", args: `{"pattern":"a.c","path":"g/re.txt"}`, want: "re.txt:1: a.c\nre.txt:2: abc"},
		{name: "grep/flag-like", tool: "grep", args: `{"pattern":"-flag","path":"g/re.txt"}`, want: "re.txt:3: -flag"},
		{name: "grep/glob", tool: "grep", args: `{"pattern":"hit","path":"g","glob":"*.go"}`, want: "sub/deep.go:1: hit in go"},
		{name: "grep/glob-path", tool: "grep", args: `{"pattern":"hit","path":"g","glob":"sub/*.ts"}`, want: "sub/deep.ts:1: hit in ts"},
		{name: "grep/long-line", tool: "grep", args: `{"pattern":"hit","path":"g/long.txt"}`,
			want: "long.txt:1: " + strings.Repeat("y", 500) + "... [truncated]\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]",
			check: func(p *parityRun, res *loop.Result) {
				if d := p.details(res); d["linesTruncated"] != true {
					p.t.Errorf("details %v", d)
				}
			}},
		{name: "grep/bad-regex", tool: "grep", args: `{"pattern":"a(","path":"g/re.txt"}`,
			match: regexp.MustCompile("\\Aregex parse error: missing closing \\): `a\\(`\\z"), isError: true},

		{name: "grep/quoting", tool: "grep", args: `{"pattern":"z","path":"q"}`,
			want: "$HOME.txt:1: z\n-n.txt:1: z\na b.txt:1: z\nback\\slash.txt:1: z\nit's.txt:1: z\nstar*.txt:1: z", sortLines: true},
		{name: "grep/symlink-not-followed", tool: "grep", args: `{"pattern":"three","path":"g2"}`, want: "own.txt:1: three"},
		{name: "grep/binary", tool: "grep", args: `{"pattern":"match","path":"bin"}`, want: "text.txt:1: match"},

		{name: "grep/context-merge", tool: "grep", args: `{"pattern":"hit","path":"g3","context":1}`,
			want: "w.txt-1- 1\nw.txt:2: hit\nw.txt-3- 3\nw.txt:4: hit\nw.txt-5- 5\nw.txt-8- 8\nw.txt:9: hit"},

		// §4.7 find
		{name: "find/anchored", tool: "find", args: `{"pattern":"src/*.ts","path":"f"}`, want: "src/a.ts"},
		{name: "find/any-depth", tool: "find", args: `{"pattern":"**/src/*.ts","path":"f"}`,
			want: "src/a.ts\npkg/src/b.ts", sortLines: true},
		{name: "find/smart-case-lower", tool: "find", args: `{"pattern":"*.md","path":"f"}`,
			want: ".hid/h.md\nREADME.MD\nnotes.md\nUpper.md", sortLines: true},
		{name: "find/smart-case-upper", tool: "find", args: `{"pattern":"*.MD","path":"f"}`, want: "README.MD"},
		{name: "find/dir-slash", tool: "find", args: `{"pattern":"dir","path":"f"}`, want: "dir/"},
		{name: "find/none", tool: "find", args: `{"pattern":"*.zzz","path":"f"}`, want: "No files found matching pattern"},

		{name: "find/limit", tool: "find", args: `{"pattern":"*","path":"many","limit":2}`,
			match: regexp.MustCompile(`\A[1-4]\n[1-4]\n\n\[2 results limit reached\. Use limit=4 for more, or refine pattern\]\z`)},
		{name: "find/node-modules", tool: "find", args: `{"pattern":"*.js","path":"f"}`, want: "node_modules/m/x.js"},
		{name: "find/hidden-dir", tool: "find", args: `{"pattern":"h.md","path":"f"}`, want: ".hid/h.md"},
		{name: "find/gitignore", tool: "find", args: `{"pattern":"*.txt","path":"repo"}`, want: "kept.txt"},
		{name: "find/missing", tool: "find", args: `{"pattern":"*","path":"nope"}`, want: "Path not found: {{cwd}}/nope", isError: true},

		{name: "find/quoting", tool: "find", args: `{"pattern":"*.txt","path":"q"}`,
			want: "$HOME.txt\n-n.txt\na b.txt\nback\\slash.txt\nit's.txt\nstar*.txt", sortLines: true},
		{name: "find/symlink-not-followed", tool: "find", args: `{"pattern":"inner.txt","path":"f"}`, want: "dir/inner.txt"},
		{name: "find/symlink-name", tool: "find", args: `{"pattern":"linkdir","path":"f"}`, want: "linkdir"},
		{name: "find/default-path", tool: "find", args: `{"pattern":"*.ts"}`,
			want: "f/src/a.ts\nf/pkg/src/b.ts\ng/sub/deep.ts", sortLines: true},
		{name: "find/dot-slash", tool: "find", args: `{"pattern":"./src/*.ts","path":"f"}`, want: "src/a.ts"},
		{name: "find/unicode", tool: "find", args: `{"pattern":"ä*","path":"l"}`, want: "ä-umlaut"},

		// §4.8 ls
		{name: "ls/order-broken-link", tool: "ls", args: `{"path":"l"}`,
			want: "_under\n-dash\n.dot\n.hdir/\n~tilde\n1num\nä-umlaut\na.txt\nb.txt\nB2.txt\nlinkdir/\nsubdir/\nZeta"},
		{name: "ls/missing", tool: "ls", args: `{"path":"nope"}`, want: "Path not found: {{cwd}}/nope", isError: true},
		{name: "ls/empty", tool: "ls", args: `{"path":"empty-dir"}`, want: "(empty directory)"},
		{name: "ls/limit", tool: "ls", args: `{"path":"many","limit":2}`,
			want: "1\n2\n\n[2 entries limit reached. Use limit=4 for more]",
			check: func(p *parityRun, res *loop.Result) {
				if d := p.details(res); d["entryLimitReached"] != 2.0 {
					p.t.Errorf("details %v", d)
				}
			}},
		{name: "ls/dotfile-only", tool: "ls", args: `{"path":"e"}`, want: ".keep"},
		{name: "ls/quoting", tool: "ls", args: `{"path":"q"}`,
			want: "-n.txt\n$HOME.txt\na b.txt\nback\\slash.txt\nit's.txt\nstar*.txt"},
		{name: "ls/not-dir", tool: "ls", args: `{"path":"plain.txt"}`, want: "Not a directory: {{cwd}}/plain.txt", isError: true},
	}
}
