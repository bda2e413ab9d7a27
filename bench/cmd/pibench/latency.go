package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// kib is the 1 KiB payload: 16 lines of 64 bytes.
var kib = strings.Repeat(strings.Repeat("x", 63)+"\n", 16)

// latOp is one latency operation: a tool call, and how a baseline does the
// same thing without pi-sandbox.
type latOp struct {
	key, name string
	tool      string
	// args returns the call's arguments; mode keeps the in-process, CLI and
	// baseline runs on separate files.
	args func(mode string, st *toggle) string
}

// toggle alternates an edit between two texts, so every call changes the
// file.
type toggle struct{ flipped bool }

func (t *toggle) pair() (string, string) {
	if t.flipped {
		return "beta", "alpha"
	}
	return "alpha", "beta"
}

func jsonArgs(v map[string]any) string {
	b, _ := loop.MarshalNoEscape(v)
	return string(b)
}

var latOps = []latOp{
	{"read1k", "read 1 KiB", "read", func(string, *toggle) string {
		return jsonArgs(map[string]any{"path": "lat/r1k.txt"})
	}},
	{"write1k", "write 1 KiB", "write", func(m string, _ *toggle) string {
		return jsonArgs(map[string]any{"path": "lat/w-" + m + ".txt", "content": kib})
	}},
	{"edit", "edit one line", "edit", func(m string, t *toggle) string {
		o, n := t.pair()
		return jsonArgs(map[string]any{"path": "lat/e-" + m + ".txt", "edits": []any{map[string]any{"oldText": "line " + o, "newText": "line " + n}}})
	}},
	{"true", "bash true", "bash", func(string, *toggle) string {
		return jsonArgs(map[string]any{"command": "true"})
	}},
	{"ls100", "ls 100 entries", "ls", func(string, *toggle) string {
		return jsonArgs(map[string]any{"path": "lat/d100"})
	}},
	{"grep10k", "grep 10,000 files", "grep", func(string, *toggle) string {
		return jsonArgs(map[string]any{"pattern": "needle", "path": "tree"})
	}},
}

// setupScript makes the latency fixtures: lat/ with the 1 KiB file, the edit
// files, a 100-entry directory, and tree/ with 10,000 files in 100
// directories, 5 of which hold "needle".
const setupScript = `set -e
mkdir -p lat/d100 tree
for m in inproc nohelper cli base; do printf 'first\nline alpha\nlast\n' > lat/e-$m.txt; done
i=0; while [ $i -lt 100 ]; do : > lat/d100/entry-$i; i=$((i+1)); done
d=0; while [ $d -lt 100 ]; do
  mkdir -p tree/d$d; f=0
  while [ $f -lt 100 ]; do echo "file $d $f some text to scan" > tree/d$d/f$f.txt; f=$((f+1)); done
  d=$((d+1))
done
for d in 7 23 42 64 99; do echo "a needle here" >> tree/d$d/f$d.txt; done
echo ok`

func setupFixtures(ctx context.Context, e *env) error {
	if err := e.raw.MkdirAll(ctx, e.path("lat"), 0o755); err != nil {
		return err
	}
	if err := e.raw.WriteFile(ctx, e.path("lat/r1k.txt"), []byte(kib), 0o644); err != nil {
		return err
	}
	var out bytes.Buffer
	if err := e.raw.Run(ctx, &ops.Cmd{Command: setupScript, Dir: e.work, Output: &out}); err != nil {
		return fmt.Errorf("fixtures: %v: %s", err, out.String())
	}
	return nil
}

// callTool runs one call through the loop pipeline and turns an error result
// into an error.
func callTool(ctx context.Context, lp *loop.Loop, name, args string) (*loop.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	b := lp.RunBatch(ctx, nil, []loop.ToolCall{{ID: "b1", Name: name, Arguments: json.RawMessage(args)}}, nil)
	r := b.Results[0].Result
	if r.IsError {
		return r, fmt.Errorf("%s: error result: %s", name, resultText(r))
	}
	return r, nil
}

// resultText is a result's text, cut at 300 bytes for a report.
func resultText(r *loop.Result) string {
	s := fullText(r)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// fullText is the whole text of a result.
func fullText(r *loop.Result) string {
	var sb strings.Builder
	for _, c := range r.Content {
		sb.WriteString(c.Text)
	}
	return sb.String()
}

// cliTool runs `pi-sandbox tool FLAGS NAME ARGS` and checks it printed a
// result that is not an error.
// cliEnv is the environment of a CLI subprocess on e: this process's, with
// DOCKER_HOST naming e's engine when it is not the default one (nil: the
// same as this process's).
func (e *env) cliEnv() []string {
	if e.dockerHost == "" {
		return nil
	}
	return append(os.Environ(), "DOCKER_HOST="+e.dockerHost)
}

func cliTool(ctx context.Context, o *options, e *env, name, args string) (*os.ProcessState, error) {
	return cliToolWatch(ctx, o, e, name, args, nil)
}

// cliToolWatch is cliTool calling started with the process's pid once it
// runs.
func cliToolWatch(ctx context.Context, o *options, e *env, name, args string, started func(pid int)) (*os.ProcessState, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.bin, append(append([]string{"tool"}, e.cli...), name, args)...)
	cmd.Env = e.cliEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Start()
	if err == nil {
		if started != nil {
			started(cmd.Process.Pid)
		}
		err = cmd.Wait()
	}
	if err != nil {
		return cmd.ProcessState, fmt.Errorf("pi-sandbox tool %s: %v: %s", name, err, firstLine(errb.String()))
	}
	if bytes.Contains(out.Bytes(), []byte(`"isError":true`)) {
		return cmd.ProcessState, fmt.Errorf("pi-sandbox tool %s: error result: %.300s", name, out.String())
	}
	return cmd.ProcessState, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// runExt runs an external command (a baseline), feeding stdin, discarding
// stdout, and returns the number of stdout bytes.
func runExt(ctx context.Context, stdin []byte, name string, args ...string) (int64, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var cw countWriter
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &cw, &errb
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return cw.n, fmt.Errorf("%s: %v: %s", name, err, firstLine(errb.String()))
	}
	return cw.n, nil
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// callTimeout bounds one call (a hang shows as an error, not a stuck run).
const callTimeout = 60 * time.Second
