package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

func TestBashDefinition(t *testing.T) {
	tool := NewBash(&bashFakeRunner{}, newBashMemFS(bashWorkDir), bashTestInfo())
	if tool.Name() != "bash" || tool.Label() != "bash" || tool.Mode() != loop.Parallel {
		t.Fatalf("name %q label %q mode %v", tool.Name(), tool.Label(), tool.Mode())
	}
	const desc = "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds."
	if tool.Description() != desc {
		t.Errorf("description:\n%q\nwant\n%q", tool.Description(), desc)
	}
	const schema = `{"type":"object","properties":{"command":{"type":"string","description":"Shell command to execute"},"timeout":{"type":"number","description":"Timeout in seconds (optional, no default timeout)"}},"required":["command"]}`
	if got := string(tool.Parameters()); got != schema {
		t.Errorf("schema:\n%s\nwant\n%s", got, schema)
	}
}

// TestBashGolden checks the texts of pi-contracts §4.4 byte for byte.
func TestBashGolden(t *testing.T) {
	cases := []struct {
		name    string
		args    map[string]any
		fn      func(context.Context, *ops.Cmd) error
		text    string
		isError bool // returned result with IsError
		err     bool // returned error
	}{
		{"exit 0", nil, bashEmitting(nil, "hi\n"), "hi\n", false, false},
		{"not trimmed", nil, bashEmitting(nil, "  a  \n\n"), "  a  \n\n", false, false},
		{"no output", nil, bashEmitting(nil), "(no output)", false, false},
		{"exit 1 no output", nil, bashEmitting(&ops.ExitError{Code: 1}), "(no output)\n\nCommand exited with code 1", true, false},
		{"exit 3 interleaved", nil, bashEmitting(&ops.ExitError{Code: 3}, "out\n", "err\n"), "out\nerr\n\n\nCommand exited with code 3", true, false},
		{"signal", nil, bashEmitting(&ops.ExitError{Code: 137, Signal: 9}, "x"), "x\n\nCommand exited with code 137", true, false},
		{"oom", nil, bashEmitting(&ops.ExitError{Code: 137, Signal: 9, OOMKilled: true}), "(no output)\n\nCommand exited with code 137 (killed: out of memory)", true, false},
		{"exit unknown", nil, bashEmitting(fmt.Errorf("ssh: %w", ops.ErrExitUnknown)), "(no output)\n\nCommand terminated without an exit code", false, true},
		{"exit unknown output", nil, bashEmitting(ops.ErrExitUnknown, "a\n"), "a\n\n\nCommand terminated without an exit code", false, true},
		{"timeout 0.2", map[string]any{"timeout": 0.2}, bashEmitting(&ops.TimeoutError{Limit: 200 * time.Millisecond}), "Command timed out after 0.2 seconds", false, true},
		{"timeout output", map[string]any{"timeout": 5.0}, bashEmitting(&ops.TimeoutError{Limit: 5 * time.Second}, "tick\n"), "tick\n\n\nCommand timed out after 5 seconds", false, true},
		{"timeout int", map[string]any{"timeout": 2}, bashEmitting(&ops.TimeoutError{Limit: 2 * time.Second}), "Command timed out after 2 seconds", false, true},
		{"timeout json.Number", map[string]any{"timeout": json.Number("1.50")}, bashEmitting(&ops.TimeoutError{Limit: 1500 * time.Millisecond}), "Command timed out after 1.5 seconds", false, true},
		{"timeout shell exited", map[string]any{"timeout": 1.0}, bashEmitting(&ops.TimeoutError{Limit: time.Second, ShellExited: true, ShellExitCode: 0, ShellRuntime: 30 * time.Millisecond}, "bg\n"),
			"bg\n\n\nCommand timed out after 1 seconds. The shell exited with code 0 after 0.0 seconds, but background processes it started kept writing output until the timeout.", false, true},
		{"timeout shell exit implausible", map[string]any{"timeout": 1.0}, bashEmitting(&ops.TimeoutError{Limit: time.Second, ShellExited: true, ShellExitCode: 137, ShellRuntime: time.Duration(math.MinInt64)}, "started\n"),
			"started\n\n\nCommand timed out after 1 seconds", false, true},
		{"invalid timeout zero", map[string]any{"timeout": 0.0}, nil, "Invalid timeout: must be a finite number of seconds", false, true},
		{"invalid timeout negative", map[string]any{"timeout": -1.0}, nil, "Invalid timeout: must be a finite number of seconds", false, true},
		{"invalid timeout string", map[string]any{"timeout": "abc"}, nil, "Invalid timeout: must be a finite number of seconds", false, true},
		{"invalid timeout max", map[string]any{"timeout": 1e21}, nil, "Invalid timeout: maximum is 2147483.647 seconds", false, true},
		{"timeout just over max", map[string]any{"timeout": 2147483.648}, nil, "Invalid timeout: maximum is 2147483.647 seconds", false, true},
		{"start error chdir", nil, bashEmitting(&ops.StartError{Err: ops.PathError("chdir", bashWorkDir, ops.ENOENT)}), "Working directory does not exist: /w\nCannot execute bash commands.", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &bashFakeRunner{fn: c.fn}
			args := map[string]any{"command": "cmd"}
			for k, v := range c.args {
				args[k] = v
			}
			res, err, _ := runBash(t, t.Context(), r, newBashMemFS(bashWorkDir, bashSpillDir), args)
			if c.err {
				if err == nil {
					t.Fatalf("want error %q, got result %+v", c.text, res)
				}
				if err.Error() != c.text {
					t.Fatalf("error:\n%q\nwant\n%q", err.Error(), c.text)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %q", err)
			}
			if len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != c.text {
				t.Fatalf("content %+v\nwant %q", res.Content, c.text)
			}
			if res.IsError != c.isError {
				t.Errorf("isError %v, want %v", res.IsError, c.isError)
			}
			if res.Details != nil {
				t.Errorf("details %#v for untruncated output, want none", res.Details)
			}
			if c.fn == nil && r.ncalls() != 0 {
				t.Errorf("runner called for an invalid call")
			}
		})
	}
}

func TestBashCommandEnvAndTimeout(t *testing.T) {
	r := &bashFakeRunner{fn: bashEmitting(nil)}
	_, err, _ := runBash(t, t.Context(), r, newBashMemFS(bashWorkDir), map[string]any{"command": "echo hi", "timeout": 0.2})
	if err != nil {
		t.Fatal(err)
	}
	cmd := r.calls[0]
	if cmd.Command != "echo hi" || cmd.Dir != bashWorkDir || cmd.Timeout != 200*time.Millisecond {
		t.Errorf("cmd %+v", cmd)
	}
	for _, e := range []string{"PAGER=cat", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0", "GIT_EDITOR=true", "DEBIAN_FRONTEND=noninteractive"} {
		if !slices.Contains(cmd.Env, e) {
			t.Errorf("env lacks %s: %v", e, cmd.Env)
		}
	}
	r = &bashFakeRunner{fn: bashEmitting(nil)}
	if _, err, _ := runBash(t, t.Context(), r, newBashMemFS(bashWorkDir), map[string]any{"command": "x"}); err != nil {
		t.Fatal(err)
	}
	if r.calls[0].Timeout != 0 {
		t.Errorf("no timeout given, got %v", r.calls[0].Timeout)
	}
	// Node clamps tiny delays to 1 ms; zero would mean no timeout.
	r = &bashFakeRunner{fn: bashEmitting(nil)}
	if _, err, _ := runBash(t, t.Context(), r, newBashMemFS(bashWorkDir), map[string]any{"command": "x", "timeout": 1e-12}); err != nil {
		t.Fatal(err)
	}
	if r.calls[0].Timeout != time.Millisecond {
		t.Errorf("tiny timeout became %v", r.calls[0].Timeout)
	}
}

func TestBashMissingWorkDir(t *testing.T) {
	r := &bashFakeRunner{fn: bashEmitting(nil, "ran")}
	_, err, _ := runBash(t, t.Context(), r, newBashMemFS(), map[string]any{"command": "x"})
	if err == nil || err.Error() != "Working directory does not exist: /w\nCannot execute bash commands." {
		t.Fatalf("err %v", err)
	}
	if r.ncalls() != 0 {
		t.Error("command ran in a missing directory")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("cause lost")
	}
}

type bashTransportFS struct{ *bashMemFS }

func (bashTransportFS) Stat(context.Context, string) (fs.FileInfo, error) {
	return nil, fmt.Errorf("ssh: connection lost: %w", ops.ErrTransport)
}

func TestBashErrorsPassThrough(t *testing.T) {
	startErr := &ops.StartError{Err: ops.PathError("exec", "/bin/bash", ops.ENOENT)}
	r := &bashFakeRunner{fn: bashEmitting(startErr, "partial")}
	_, err, _ := runBash(t, t.Context(), r, newBashMemFS(bashWorkDir), map[string]any{"command": "x"})
	if err != startErr {
		t.Errorf("start error %v, want it unchanged", err)
	}
	transport := fmt.Errorf("docker: exec attach: %w", ops.ErrTransport)
	r = &bashFakeRunner{fn: bashEmitting(transport)}
	if _, err, _ = runBash(t, t.Context(), r, newBashMemFS(bashWorkDir), map[string]any{"command": "x"}); err != transport {
		t.Errorf("transport error %v, want it unchanged", err)
	}
	r = &bashFakeRunner{fn: bashEmitting(nil)}
	_, err, _ = runBash(t, t.Context(), r, bashTransportFS{newBashMemFS()}, map[string]any{"command": "x"})
	if !errors.Is(err, ops.ErrTransport) || strings.Contains(err.Error(), "Working directory") {
		t.Errorf("stat transport failure became %q", err)
	}
}

func TestBashAbort(t *testing.T) {
	for _, c := range []struct {
		name, out, want string
	}{
		{"with output", "started\n", "started\n\n\nCommand aborted"},
		{"no output", "", "Command aborted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r := &bashFakeRunner{fn: func(ctx context.Context, cmd *ops.Cmd) error {
				if c.out != "" {
					cmd.Output.Write([]byte(c.out))
				}
				cancel() // the user aborts while the command runs
				<-ctx.Done()
				return ops.Canceled(ctx)
			}}
			res, err, _ := runBash(t, ctx, r, newBashMemFS(bashWorkDir), map[string]any{"command": "x"})
			if err == nil || err.Error() != c.want {
				t.Fatalf("got %v, %v; want error %q", res, err, c.want)
			}
			if !errors.Is(err, ops.ErrCanceled) {
				t.Error("cause lost")
			}
		})
	}
	t.Run("before start", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		r := &bashFakeRunner{fn: bashEmitting(nil)}
		_, err, _ := runBash(t, ctx, r, newBashMemFS(bashWorkDir), map[string]any{"command": "x"})
		if err == nil || err.Error() != "Command aborted" || r.ncalls() != 0 {
			t.Fatalf("err %v, calls %d", err, r.ncalls())
		}
	})
	t.Run("invalid timeout wins over abort", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err, _ := runBash(t, ctx, &bashFakeRunner{}, newBashMemFS(bashWorkDir), map[string]any{"command": "x", "timeout": -1.0})
		if err == nil || err.Error() != "Invalid timeout: must be a finite number of seconds" {
			t.Fatalf("err %v", err)
		}
	})
}

var bashSpillName = regexp.MustCompile(`^/spill/pi-bash-[0-9a-f]{16}\.log$`)

func bashLines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// TestBashTruncationNotices checks the three notices, details and the spill
// file behind them.
func TestBashTruncationNotices(t *testing.T) {
	longLine := strings.Repeat("x", 100000)
	cases := []struct {
		name   string
		out    string
		err    error
		want   string // text with PATH for the spill file
		by     truncatedBy
		errOut bool
	}{
		{
			name: "lines", out: bashLines(1, 3000),
			want: strings.TrimSuffix(bashLines(1001, 3000), "\n") + "\n\n[Showing lines 1001-3000 of 3000. Full output: PATH]",
			by:   byLines,
		},
		{
			name: "bytes", out: strings.Repeat(strings.Repeat("b", 999)+"\n", 100),
			want: strings.TrimSuffix(strings.Repeat(strings.Repeat("b", 999)+"\n", 51), "\n") + "\n\n[Showing lines 50-100 of 100 (50.0KB limit). Full output: PATH]",
			by:   byBytes,
		},
		{
			name: "partial line", out: longLine,
			want: strings.Repeat("x", 51200) + "\n\n[Showing last 50.0KB of line 1 (line is 97.7KB). Full output: PATH]",
			by:   byBytes,
		},
		{
			name: "partial line 0B quirk", out: longLine + "\n",
			want: strings.Repeat("x", 51200) + "\n\n[Showing last 50.0KB of line 1 (line is 0B). Full output: PATH]",
			by:   byBytes,
		},
		{
			name: "exit code after notice", out: bashLines(1, 2001), err: &ops.ExitError{Code: 2},
			want: strings.TrimSuffix(bashLines(2, 2001), "\n") + "\n\n[Showing lines 2-2001 of 2001. Full output: PATH]\n\nCommand exited with code 2",
			by:   byLines,
		},
		{
			name: "timeout with notice", out: bashLines(1, 2001), err: &ops.TimeoutError{Limit: time.Second},
			want: strings.TrimSuffix(bashLines(2, 2001), "\n") + "\n\n[Showing lines 2-2001 of 2001. Full output: PATH]\n\nCommand timed out after 1 seconds",
			by:   byLines, errOut: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := newBashMemFS(bashWorkDir, bashSpillDir)
			// Odd chunk sizes so lines and characters straddle chunks.
			var chunks []string
			for s := c.out; s != ""; {
				n := min(4093, len(s))
				chunks = append(chunks, s[:n])
				s = s[n:]
			}
			args := map[string]any{"command": "x"}
			if c.errOut {
				args["timeout"] = 1.0
			}
			res, err, _ := runBash(t, t.Context(), &bashFakeRunner{fn: bashEmitting(c.err, chunks...)}, fsys, args)
			names := fsys.names()
			if len(names) != 1 || !bashSpillName.MatchString(names[0]) {
				t.Fatalf("spill files %v", names)
			}
			path := names[0]
			want := strings.ReplaceAll(c.want, "PATH", path)
			var text string
			if c.errOut {
				if err == nil {
					t.Fatal("want an error")
				}
				text = err.Error()
			} else {
				if err != nil {
					t.Fatal(err)
				}
				text = res.Content[0].Text
				d, ok := res.Details.(*bashDetails)
				if !ok || d.FullOutputPath != path || d.Truncation == nil || !d.Truncation.Truncated || d.Truncation.TruncatedBy != c.by {
					t.Errorf("details %#v", res.Details)
				}
				sc := res.StructuredContent.(*bashStructured)
				if !sc.Truncated || sc.FullOutputPath != path {
					t.Errorf("structured %+v", sc)
				}
			}
			if text != want {
				t.Errorf("text (%d bytes) ends\n%q\nwant (%d bytes) ending\n%q", len(text), bashTailOf(text, 300), len(want), bashTailOf(want, 300))
			}
			got, _ := fsys.file(path)
			if string(got) != c.out {
				t.Errorf("spill file has %d bytes, want the %d raw bytes", len(got), len(c.out))
			}
			if fsys.flags[path] != syscall.O_CREAT|syscall.O_EXCL || fsys.perms[path] != 0o600 {
				t.Errorf("spill opened with flag %#x perm %v", fsys.flags[path], fsys.perms[path])
			}
		})
	}
}

func bashTailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func TestBashDetailsJSON(t *testing.T) {
	fsys := newBashMemFS(bashWorkDir, bashSpillDir)
	res, err, _ := runBash(t, t.Context(), &bashFakeRunner{fn: bashEmitting(nil, bashLines(1, 2001))}, fsys, map[string]any{"command": "x"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := loop.MarshalNoEscape(res)
	if err != nil {
		t.Fatal(err)
	}
	path := fsys.names()[0]
	wantDetails := `"details":{"truncation":{"content":"` + strings.ReplaceAll(strings.TrimSuffix(bashLines(2, 2001), "\n"), "\n", `\n`) +
		`","truncated":true,"truncatedBy":"lines","totalLines":2001,"totalBytes":` + fmt.Sprint(len(bashLines(1, 2001))) +
		`,"outputLines":2000,"outputBytes":` + fmt.Sprint(len(bashLines(2, 2001))-1) +
		`,"lastLinePartial":false,"firstLineExceedsLimit":false,"maxLines":2000,"maxBytes":51200},"fullOutputPath":"` + path + `"}`
	if !strings.Contains(string(b), wantDetails) {
		t.Errorf("result JSON\n%s\nlacks\n%s", bashTailOf(string(b), 600), bashTailOf(wantDetails, 600))
	}
}

func TestBashStructuredContent(t *testing.T) {
	res, err, _ := runBash(t, t.Context(), &bashFakeRunner{fn: bashEmitting(&ops.ExitError{Code: 4}, "a\n", "b")}, newBashMemFS(bashWorkDir), map[string]any{"command": "x"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if got := string(b); got != `{"output":"a\nb","truncated":false,"exit_code":4,"wall_time_seconds":0}` {
		t.Errorf("structured %s", got)
	}
	res, _, _ = runBash(t, t.Context(), &bashFakeRunner{fn: bashEmitting(nil)}, newBashMemFS(bashWorkDir), map[string]any{"command": "x"})
	if sc := res.StructuredContent.(*bashStructured); sc.Output != "" || sc.ExitCode != 0 {
		t.Errorf("empty structured %+v", sc)
	}

	// 3 MiB: first 512 KiB + marker + last 512 KiB.
	const half = 512 << 10
	var chunks []string
	var full strings.Builder
	for i := 0; full.Len() < 3<<20; i++ {
		c := fmt.Sprintf("%07d\n", i)
		full.WriteString(c)
	}
	all := full.String()
	for s := all; s != ""; {
		n := min(70001, len(s))
		chunks = append(chunks, s[:n])
		s = s[n:]
	}
	res, err, _ = runBash(t, t.Context(), &bashFakeRunner{fn: bashEmitting(nil, chunks...)}, newBashMemFS(bashWorkDir, bashSpillDir), map[string]any{"command": "x"})
	if err != nil {
		t.Fatal(err)
	}
	sc := res.StructuredContent.(*bashStructured)
	want := all[:half] + fmt.Sprintf("\n\n[... %d bytes omitted ...]\n\n", len(all)-2*half) + all[len(all)-half:]
	if sc.Output != want {
		t.Errorf("structured output %d bytes, want %d", len(sc.Output), len(want))
	}
}

func TestBashJSNumber(t *testing.T) {
	for f, want := range map[float64]string{
		0.2: "0.2", 5: "5", 1e21: "1e+21", 1e-7: "1e-7", 0.000001: "0.000001", 123.456: "123.456",
		2147483.647: "2147483.647", 1e20: "100000000000000000000", 1.5e-10: "1.5e-10", 0.30000000000000004: "0.30000000000000004",
		-2.5: "-2.5", 1.7976931348623157e308: "1.7976931348623157e+308",
	} {
		if got := formatJSNumber(f); got != want {
			t.Errorf("formatJSNumber(%v) = %q, want %q", f, got, want)
		}
	}
}

// bashVanishingFS: the working directory exists for the first Stat only, as
// when it is removed between the check and the start.
type bashVanishingFS struct {
	*bashMemFS
	stats int
}

func (f *bashVanishingFS) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	f.stats++
	if f.stats == 1 {
		return bashDirInfo{name}, nil
	}
	return nil, ops.PathError("stat", name, ops.ENOENT)
}

func TestBashWorkDirVanishes(t *testing.T) {
	// os/exec's way of reporting a failed chdir.
	startErr := &ops.StartError{Err: fmt.Errorf("local: start: %w", &fs.PathError{Op: "fork/exec", Path: "/bin/bash", Err: ops.ENOENT})}
	r := &bashFakeRunner{fn: bashEmitting(startErr)}
	_, err, _ := runBash(t, t.Context(), r, &bashVanishingFS{bashMemFS: newBashMemFS()}, map[string]any{"command": "x"})
	if err == nil || err.Error() != "Working directory does not exist: /w\nCannot execute bash commands." {
		t.Fatalf("err %v", err)
	}
	// The directory is there: the start error is the shell's, unchanged.
	_, err, _ = runBash(t, t.Context(), r, newBashMemFS(bashWorkDir), map[string]any{"command": "x"})
	if err != startErr {
		t.Fatalf("err %v, want the start error unchanged", err)
	}
}
