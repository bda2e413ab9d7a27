package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// hardeningFaults replays the first adversarial run's defects on e,
// one row per item: 1 (memory of edit and grep), 3 (predictable temporary
// names), 4 (a full spill target), 5 (a secret cut by the output window),
// 7 (another sandbox's full output), 8 (lost updates), 11 (files without
// bounds). Items 2 and 12 are the helper scenarios (the CLI killed, the
// binary replaced).
func hardeningFaults(ctx context.Context, o *options, p *progress, e *env) []scenResult {
	var rows []scenResult
	add := func(name string, r scenResult) {
		r.Backend, r.Scenario = e.name, name
		rows = append(rows, r)
	}
	p.step("%s: 17.1 edit and grep of a 128 MiB sparse file", e.name)
	add("17.1 edit and grep of a 128 MiB sparse file with a short first line → CLI peak RSS < 512 MiB", memoryBound(ctx, o, e))
	p.step("%s: 17.3 links planted at predictable temporary names", e.name)
	add("17.3 write with 1500 links planted at .pi-sandbox-write.PID → the outside file unchanged, the target a regular file", plantedTemp(ctx, e))
	p.step("%s: 17.4 full spill target", e.name)
	add("17.4 bash `yes` (3 s timeout) with the spill target's filesystem full (docker: a container whose /tmp is 64 MiB) → returns at its timeout", fullSpill(ctx, o, e))
	p.step("%s: 17.5 a secret cut by the output window", e.name)
	add("17.5 a redacted secret at the edge of the 50 KB window → no 8-character piece of it in the result", cutSecret(ctx, o, e))
	if e.name == "local" {
		p.step("local: 17.7 another sandbox's full output")
		add("17.7 full output of sandbox A read from sandbox B (another workdir) → refused; from A → read", spillShared(ctx, o))
	}
	p.step("%s: 17.8 lost updates", e.name)
	add("17.8 write then edit in one batch ×10, and two sessions editing 40 lines each of one file → order kept, no update lost", lostUpdates(ctx, e))
	p.step("%s: 17.11 files without bounds", e.name)
	add("17.11 read /dev/zero, read a FIFO, ls of 20,000 entries → each returns within 10 s (the reads refused, the listing cut at the output limit)", unbounded(ctx, e))
	return rows
}

// cliRun runs `pi-sandbox tool <backend flags> args…`: its output, exit
// code, peak RSS (MiB) and duration.
func cliRun(ctx context.Context, o *options, env []string, args ...string) (string, int, int64, time.Duration, error) {
	return cliRunWithin(ctx, o, 2*time.Minute, env, args...)
}

// cliRunWithin is cliRun with the call cut after limit.
func cliRunWithin(ctx context.Context, o *options, limit time.Duration, env []string, args ...string) (string, int, int64, time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(cctx, o.bin, append([]string{"tool"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &tailBuffer{max: 2 << 10}
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if cmd.ProcessState == nil {
		return "", -1, 0, d, err
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss >> 10
	}
	if cctx.Err() != nil {
		return out.String(), -1, rss, d, fmt.Errorf("no answer within %s", limit)
	}
	return out.String(), cmd.ProcessState.ExitCode(), rss, d, nil
}

// call runs one tool call through e's loop.
func call(ctx context.Context, lp *loop.Loop, tool string, args map[string]any) *loop.Result {
	b := lp.RunBatch(ctx, nil, []loop.ToolCall{{ID: "h", Name: tool, Arguments: []byte(jsonArgs(args))}}, nil)
	return b.Results[0].Result
}

func memoryBound(ctx context.Context, o *options, e *env) scenResult {
	r := scenResult{Trials: 2}
	if _, err := runOut(ctx, e.raw, "cd "+shq(e.work)+" && rm -f big.txt && truncate -s 128M big.txt && printf 'line1\\n' | dd of=big.txt conv=notrunc 2>/dev/null", 30*time.Second); err != nil {
		return scenResult{Skipped: "setup: " + err.Error()}
	}
	defer runOut(ctx, e.raw, "rm -f "+shq(e.path("big.txt")), 30*time.Second)
	var notes []string
	for _, c := range []struct{ tool, args string }{
		{"edit", `{"path":"big.txt","edits":[{"oldText":"line1","newText":"X"}]}`},
		{"grep", `{"pattern":"line1","path":"big.txt"}`},
	} {
		out, code, rss, d, err := cliRun(ctx, o, nil, append(append([]string{}, e.cli...), c.tool, c.args)...)
		first := firstLine(resultOf(out))
		notes = append(notes, fmt.Sprintf("%s: %d MiB, %.1f s, exit %d: %s", c.tool, rss, d.Seconds(), code, first))
		switch {
		case err != nil:
			r.Failures++
			r.Hangs++
			r.FirstFail = c.tool + ": " + err.Error()
		case rss >= 512:
			r.Failures++
			r.FirstFail = fmt.Sprintf("%s: peak RSS %d MiB", c.tool, rss)
		}
	}
	r.Note = strings.Join(notes, "; ")
	return r
}

// resultOf is the text of a tool result the CLI printed.
func resultOf(out string) string {
	var res loop.Result
	if json.Unmarshal([]byte(out), &res) != nil {
		return out
	}
	return fullText(&res)
}

func plantedTemp(ctx context.Context, e *env) scenResult {
	r := scenResult{Trials: 1}
	setup := `set -e
o=$(mktemp -d /tmp/pibench-victim-XXXXXX); echo ORIGINAL > "$o/victim"
cd ` + shq(e.work) + ` && rm -f target.txt
i=$$; n=$((i + 1500)); while [ $i -lt $n ]; do ln -s "$o/victim" .pi-sandbox-write.$i; i=$((i + 1)); done
echo "$o"`
	out, err := runOut(ctx, e.raw, setup, time.Minute)
	if err != nil {
		return scenResult{Skipped: fmt.Sprintf("setup: %v: %s", err, out)}
	}
	outside := strings.TrimSpace(out)
	defer runOut(ctx, e.raw, "rm -rf "+shq(outside)+"; cd "+shq(e.work)+" && rm -f .pi-sandbox-write.* target.txt", time.Minute)
	res := call(ctx, e.lp, "write", map[string]any{"path": "target.txt", "content": "0123456789ABCD\n"})
	chk, _ := runOut(ctx, e.raw, "cat "+shq(outside+"/victim")+"; [ -f target.txt ] && [ ! -L target.txt ] && cat target.txt", 30*time.Second)
	switch {
	case res.IsError:
		r.Failures, r.FirstFail = 1, "write failed: "+resultText(res)
	case chk != "ORIGINAL\n0123456789ABCD\n":
		r.Failures, r.FirstFail = 1, fmt.Sprintf("after the write: %q", chk)
	}
	return r
}

func fullSpill(ctx context.Context, o *options, e *env) scenResult {
	if e.name != "docker" {
		return scenResult{Skipped: "the spill directory is on the host's disk here; filling it would fill the machine (docker runs it in a container of its own; the helper's spill tests in ops/helper fill a tmpfs)"}
	}
	// A container of its own whose only writable place is a 64 MiB /tmp:
	// the sandbox's state and spill directory go there.
	id, err := runExt2(ctx, "docker", "run", "-d", "--rm", "--read-only", "--network", "none", "--user", "1000:1000",
		"--tmpfs", "/tmp:rw,exec,nosuid,nodev,size=64m,mode=1777", "--label", benchLabel+"="+fmt.Sprint(os.Getpid()), o.image, "sleep", "infinity")
	if err != nil {
		return scenResult{Skipped: "docker run: " + err.Error()}
	}
	id = strings.TrimSpace(id)
	defer runExt2(context.Background(), "docker", "rm", "-f", id)
	raw, err := docker.New(ctx, docker.Config{Container: id, ShimBinary: o.shim})
	if err != nil {
		return scenResult{Skipped: "open the backend: " + err.Error()}
	}
	defer raw.Close()
	info := raw.Info()
	_, lp, err := confinedLoop(ctx, raw)
	if err != nil {
		return scenResult{Skipped: "confine: " + err.Error()}
	}
	fsType, _ := runOut(ctx, raw, "df -P "+shq(info.SpillDir)+" | awk 'NR==2{print $1}'", 30*time.Second)
	if strings.TrimSpace(fsType) != "tmpfs" {
		return scenResult{Skipped: fmt.Sprintf("the spill directory %s is not on the 64 MiB /tmp (%q)", info.SpillDir, strings.TrimSpace(fsType))}
	}
	runOut(ctx, raw, "dd if=/dev/zero of=/tmp/pibench-fill bs=1M 2>/dev/null; true", 2*time.Minute)
	r := scenResult{Trials: 1}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, hangLimit+3*time.Second)
	defer cancel()
	res := call(cctx, lp, "bash", map[string]any{"command": "yes", "timeout": 3})
	d := time.Since(start)
	r.P50Ms, r.P99Ms = ms(d-3*time.Second), ms(d-3*time.Second)
	text := fullText(res)
	switch {
	case cctx.Err() != nil:
		r.Failures, r.Hangs, r.FirstFail = 1, 1, fmt.Sprintf("no result %s after the timeout", hangLimit)
	case d > 13*time.Second:
		r.Failures, r.FirstFail = 1, fmt.Sprintf("returned %.1f s after its 3 s timeout", (d-3*time.Second).Seconds())
	case !strings.Contains(text, "timed out"):
		r.Failures, r.FirstFail = 1, "not a timeout: "+firstLine(lastLines(text, 3))
	}
	r.Note = "return = after the 3 s timeout; " + lastLines(text, 2)
	return r
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(len(l)-n, 0):], " ")
}

func cutSecret(ctx context.Context, o *options, e *env) scenResult {
	r := scenResult{Trials: 1}
	b := make([]byte, 18)
	rand.Read(b)
	token := fmt.Sprintf("ghp_%x", b) // 40 characters
	args := append(append([]string{"--env", "GITHUB_TOKEN", "--env", "PATH", "--redact-env", "GITHUB_TOKEN"}, e.cli...),
		"bash", `{"command":"printf %s \"$GITHUB_TOKEN\"; head -c 51164 /dev/zero; echo"}`)
	out, code, _, _, err := cliRun(ctx, o, []string{"GITHUB_TOKEN=" + token}, args...)
	if err != nil || code != 0 {
		r.Failures, r.FirstFail = 1, fmt.Sprintf("exit %d, %v: %s", code, err, firstLine(out))
		return r
	}
	for i := 0; i+8 <= len(token); i++ {
		if strings.Contains(out, token[i:i+8]) {
			r.Failures, r.FirstFail = 1, fmt.Sprintf("%q (characters %d–%d of the secret) is in the result", token[i:i+8], i, i+8)
			break
		}
	}
	return r
}

var fullOutputRe = regexp.MustCompile(`"fullOutputPath":"([^"]+)"`)

func spillShared(ctx context.Context, o *options) scenResult {
	r := scenResult{Trials: 1}
	a, _ := os.MkdirTemp("", "pibench-a-")
	b, _ := os.MkdirTemp("", "pibench-b-")
	defer os.RemoveAll(a)
	defer os.RemoveAll(b)
	out, _, _, _, err := cliRun(ctx, o, nil, "--backend", "local", "--workdir", a, "bash", `{"command":"seq 1 3000"}`)
	m := fullOutputRe.FindStringSubmatch(out)
	if err != nil || m == nil {
		r.Failures, r.FirstFail = 1, fmt.Sprintf("no full output path (%v): %s", err, firstLine(out))
		return r
	}
	read := `{"path":"` + m[1] + `","limit":2}`
	outA, _, _, _, _ := cliRun(ctx, o, nil, "--backend", "local", "--workdir", a, "read", read)
	outB, _, _, _, _ := cliRun(ctx, o, nil, "--backend", "local", "--workdir", b, "read", read)
	switch {
	case !strings.HasPrefix(resultOf(outA), "1\n2\n"):
		r.Failures, r.FirstFail = 1, "sandbox A cannot read its own full output: "+firstLine(resultOf(outA))
	case !strings.Contains(resultOf(outB), "outside the sandbox"):
		r.Failures, r.FirstFail = 1, "sandbox B read A's full output: "+firstLine(resultOf(outB))
	}
	return r
}

func lostUpdates(ctx context.Context, e *env) scenResult {
	r := scenResult{Trials: 11}
	var firsts []string
	fail := func(s string) {
		r.Failures++
		firsts = append(firsts, s)
		r.FirstFail = strings.Join(firsts, "; ")
	}
	name := e.path("order.txt")
	for i := range 10 {
		b := e.lp.RunBatch(ctx, nil, []loop.ToolCall{
			{ID: "w", Name: "write", Arguments: []byte(jsonArgs(map[string]any{"path": name, "content": fmt.Sprintf("v1 %d\n", i)}))},
			{ID: "e", Name: "edit", Arguments: []byte(jsonArgs(map[string]any{"path": name, "edits": []any{map[string]any{"oldText": "v1", "newText": "v2"}}}))},
		}, nil)
		got, _ := runOut(ctx, e.raw, "cat "+shq(name), 30*time.Second)
		if got != fmt.Sprintf("v2 %d\n", i) || b.Results[1].Result.IsError {
			fail(fmt.Sprintf("run %d: %q after write then edit (%s)", i, got, firstLine(resultText(b.Results[1].Result))))
			break
		}
	}
	// Two sessions (two backends, two helpers) edit different lines.
	const lines = 40
	shared := e.path("shared.txt")
	var init strings.Builder
	for i := range 2 * lines {
		fmt.Fprintf(&init, "line %d old\n", i)
	}
	if err := e.raw.WriteFile(ctx, shared, []byte(init.String()), 0o644); err != nil {
		fail("setup: " + err.Error())
		return r
	}
	raw2, err := openBackend(ctx, e.spec)
	if err != nil {
		fail("second session: " + err.Error())
		return r
	}
	defer raw2.Close()
	_, lp2, err := confinedLoop(ctx, raw2)
	if err != nil {
		fail("second session: " + err.Error())
		return r
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs, firstErr := 0, ""
	for k, lp := range []*loop.Loop{e.lp, lp2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < 2*lines; i += 2 {
				res := call(ctx, lp, "edit", map[string]any{"path": shared, "edits": []any{map[string]any{"oldText": fmt.Sprintf("line %d old\n", i), "newText": fmt.Sprintf("line %d new\n", i)}}})
				if res.IsError {
					mu.Lock()
					if errs++; errs == 1 {
						firstErr = firstLine(resultText(res))
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	got, _ := runOut(ctx, e.raw, "grep -c ' new$' "+shq(shared)+"; true", 30*time.Second)
	if strings.TrimSpace(got) != fmt.Sprint(2*lines) {
		fail(fmt.Sprintf("%s of %d concurrent edits kept (%d reported errors, the first: %s)", strings.TrimSpace(got), 2*lines, errs, firstErr))
	}
	runOut(ctx, e.raw, "rm -f "+shq(name)+" "+shq(shared), 30*time.Second)
	return r
}

func unbounded(ctx context.Context, e *env) scenResult {
	r := scenResult{Trials: 3}
	dir := e.path("pibench-many")
	fifo := e.path("pibench-fifo")
	if out, err := runOut(ctx, e.raw, "rm -rf "+shq(dir)+" "+shq(fifo)+" && mkdir "+shq(dir)+" && cd "+shq(dir)+" && seq 1 20000 | xargs touch && mkfifo "+shq(fifo), 2*time.Minute); err != nil {
		return scenResult{Skipped: fmt.Sprintf("setup: %v: %s", err, out)}
	}
	defer runOut(ctx, e.raw, "rm -rf "+shq(dir)+" "+shq(fifo), time.Minute)
	var lats []time.Duration
	var notes []string
	for _, c := range []struct {
		tool string
		args map[string]any
		ok   func(*loop.Result) bool
	}{
		{"read", map[string]any{"path": "/dev/zero"}, func(res *loop.Result) bool { return res.IsError }},
		{"read", map[string]any{"path": fifo}, func(res *loop.Result) bool { return res.IsError }},
		{"ls", map[string]any{"path": dir, "limit": 30000}, func(res *loop.Result) bool {
			// The listing is cut at the output limit (50 KB), with a notice.
			return !res.IsError && strings.Count(fullText(res), "\n") >= 1000
		}},
	} {
		cctx, cancel := context.WithTimeout(ctx, hangLimit)
		start := time.Now()
		res := call(cctx, e.lp, c.tool, c.args)
		d := time.Since(start)
		hung := cctx.Err() != nil
		cancel()
		lats = append(lats, d)
		what := fmt.Sprintf("%s %v", c.tool, c.args["path"])
		notes = append(notes, fmt.Sprintf("%s: %.2f s", what, d.Seconds()))
		switch {
		case hung:
			r.Failures++
			r.Hangs++
			r.FirstFail = what + ": no result within " + hangLimit.String()
		case d > 10*time.Second || !c.ok(res):
			r.Failures++
			r.FirstFail = fmt.Sprintf("%s: %.1f s: %s", what, d.Seconds(), firstLine(resultText(res)))
		}
	}
	s := summarize(lats)
	r.P50Ms, r.P99Ms = s.P50Ms, s.P99Ms
	r.Note = strings.Join(notes, "; ")
	return r
}
