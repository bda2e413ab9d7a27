package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/savedout"
)

// bashDescription is pi 1.6's text, byte for byte.
const bashDescription = "Execute a bash command in the current working directory. Returns stdout and stderr. " +
	"Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is " +
	"saved to a temp file. Optionally provide a timeout in seconds."

// maxTimeoutMS is pi's MAX_TIMEOUT_MS (Node's largest setTimeout delay).
const maxTimeoutMS = 2147483647

// bashEnv makes commands non-interactive. pi also sets
// PI_SESSION_ID, PI_SESSION_FILE, PI_PROVIDER, PI_MODEL and
// PI_REASONING_LEVEL from its session; pi-sandbox runs tools without a pi
// session, so there is nothing to expose.
var bashEnv = ops.NonInteractiveEnv()

var bashSchema = objectSchema(
	stringParam("command", "Shell command to execute", true),
	numberParam("timeout", "Timeout in seconds (optional, no default timeout)", false),
)

// bashDetails is pi's BashToolDetails.
type bashDetails struct {
	Truncation     *truncation `json:"truncation,omitempty"`
	FullOutputPath string      `json:"fullOutputPath,omitempty"`
}

// bashStructured is pi 1.6's structuredContent for bash.
type bashStructured struct {
	Output          string  `json:"output"`
	Truncated       bool    `json:"truncated"`
	FullOutputPath  string  `json:"full_output_path,omitempty"`
	ExitCode        int     `json:"exit_code"`
	WallTimeSeconds float64 `json:"wall_time_seconds"`
}

type bashTool struct {
	r        ops.Runner
	fsys     ops.FS
	info     ops.Info
	spillCap int64
	// spillTotal bounds the sandbox's saved outputs (savedout.Total).
	spillTotal int64
	opts       Options
}

// NewBash returns pi's bash tool. Commands run through r in info.WorkDir,
// which must exist on the target (checked with fsys). When the output is
// truncated, the full raw output is streamed into pi-bash-<16 hex>.log in
// info.SpillDir through fsys, so the model can read it through the same
// backend.
//
// Where it differs from pi 1.6, on purpose:
//   - The spill file lives in the target's spill directory, not the host's
//     temp directory; a missing directory is created; the file is capped at
//     1 GiB, ending with a note line when the cap is hit, and the sandbox's
//     saved outputs in all at ops.Info.SavedOutputTotal. If the file cannot
//     be created the notice says "Full output: not saved (<error>)" (pi's
//     local file cannot fail that way).
//   - Commands get PAGER=cat, GIT_PAGER=cat, GIT_TERMINAL_PROMPT=0,
//     GIT_EDITOR=true and DEBIAN_FRONTEND=noninteractive; pi's PI_* session
//     variables are not set (there is no pi session).
//   - A command killed by the out-of-memory killer (ops.ExitError.OOMKilled)
//     ends with "Command exited with code <N> (killed: out of memory)".
//   - pi's options (commandPrefix, shellPath, spawnHook, operations) do not
//     exist: the backend is the operations.
//   - The shell's run time in the timeout sentence for background writers
//     is printed with one decimal ("after 0.0 seconds").
func NewBash(r ops.Runner, fsys ops.FS, info ops.Info) loop.Tool {
	return newBash(r, fsys, info, Options{})
}

func newBash(r ops.Runner, fsys ops.FS, info ops.Info, opts Options) *bashTool {
	return &bashTool{r: r, fsys: fsys, info: info, spillCap: defaultSpillCap, spillTotal: savedout.Total(info), opts: opts}
}

func (t *bashTool) Name() string                { return "bash" }
func (t *bashTool) Label() string               { return "bash" }
func (t *bashTool) Description() string         { return bashDescription }
func (t *bashTool) Parameters() json.RawMessage { return bashSchema }
func (t *bashTool) Mode() loop.Mode             { return loop.Parallel }

// bashError is a failed call: text is pi's message, cause the error behind
// it, so a transport failure stays recognisable with errors.Is.
type bashError struct {
	text  string
	cause error
}

func (e *bashError) Error() string { return e.text }
func (e *bashError) Unwrap() error { return e.cause }

// Execute follows pi's bash tool: stream the output
// through the accumulator, then append the status to the tail-truncated
// text. A non-zero exit is a returned result with IsError; aborts, timeouts,
// a lost exit status and failures to start are errors.
func (t *bashTool) Execute(ctx context.Context, _ string, args map[string]any, update loop.UpdateFunc) (*loop.Result, error) {
	command, _ := args["command"].(string)
	// Where the runner saves the output in the target itself
	// (ops.SpillRunner), the bytes are not sent back there to be saved.
	var target *targetSpill
	s := newBashStream(update, func() spillHandle {
		if target != nil {
			return target
		}
		return startSpill(ctx, t.fsys, t.info.SpillDir, t.spillCap, t.spillTotal)
	})
	// A filtered output is saved as the tool sees it, so from the tool.
	filter := t.opts.filter(ctx, s)
	if _, ok := t.r.(ops.SpillRunner); ok && t.fsys != nil && filter == nil {
		target = newTargetSpill(ctx, t.fsys, t.info.SpillDir, t.spillCap, t.spillTotal)
	}
	if update != nil {
		update(&loop.Result{Content: []loop.Content{}})
	}
	start := time.Now()
	timeoutText, ran, err := t.run(ctx, command, args["timeout"], s, filter, &target)
	snap, full := s.finish()
	wall := time.Since(start)
	if !ran && !errors.Is(err, ops.ErrCanceled) {
		// Invalid timeout or missing working directory: pi's operations
		// throw these before spawning, and the tool rethrows them as they are.
		return nil, err
	}

	var exit *ops.ExitError
	var timeout *ops.TimeoutError
	switch {
	case ctx.Err() != nil || errors.Is(err, ops.ErrCanceled):
		text, _ := formatBashOutput(snap, full, s.lastLineBytes(), "")
		return nil, &bashError{appendStatus(text, "Command aborted"), err}
	case errors.As(err, &timeout):
		text, _ := formatBashOutput(snap, full, s.lastLineBytes(), "")
		return nil, &bashError{appendStatus(text, timeoutStatus(timeoutText, timeout)), err}
	case errors.Is(err, ops.ErrExitUnknown):
		text, _ := formatBashOutput(snap, full, s.lastLineBytes(), "(no output)")
		return nil, &bashError{appendStatus(text, "Command terminated without an exit code"), err}
	case err != nil && !errors.As(err, &exit):
		return nil, err
	}

	text, details := formatBashOutput(snap, full, s.lastLineBytes(), "(no output)")
	res := &loop.Result{Content: []loop.Content{loop.Text(text)}}
	if details != nil {
		res.Details = details
	}
	sc := &bashStructured{
		Output:          s.structuredOutput(),
		Truncated:       snap.Truncated,
		WallTimeSeconds: math.Round(wall.Seconds()*10) / 10,
	}
	if snap.Truncated {
		sc.FullOutputPath = full.path
	}
	if exit != nil {
		status := "Command exited with code " + strconv.Itoa(exit.Code)
		if exit.OOMKilled {
			status += " (killed: out of memory)"
		}
		res.Content[0].Text = appendStatus(text, status)
		res.IsError = true
		sc.ExitCode = exit.Code
	}
	res.StructuredContent = sc
	return res, nil
}

// run validates the call like pi's local operations (§8.2: timeout, abort,
// working directory) and runs the command. It returns the timeout as the
// caller wrote it, for the timeout message, and whether the command ran.
func (t *bashTool) run(ctx context.Context, command string, rawTimeout any, s *bashStream, filter io.WriteCloser, target **targetSpill) (string, bool, error) {
	limit, timeoutText, err := parseTimeout(rawTimeout)
	if err != nil {
		return "", false, err
	}
	if ctx.Err() != nil {
		return "", false, ops.Canceled(ctx)
	}
	cwd := t.info.WorkDir
	// A runner that checks the directory in the same round trip as the
	// command (the helper) spares the Stat; startedWithoutDir reads its
	// answer.
	if t.fsys != nil && !checksDir(t.r) {
		if _, err := t.fsys.Stat(ctx, cwd); err != nil {
			switch {
			case ctx.Err() != nil:
				return "", false, ops.Canceled(ctx)
			case errors.Is(err, ops.ErrTransport):
				return "", false, err
			}
			return "", false, missingWorkDir(cwd, err)
		}
	}
	cmd := &ops.Cmd{
		Command: command,
		Dir:     cwd,
		Env:     bashEnv,
		BaseEnv: t.opts.BaseEnv,
		Output:  s,
		Timeout: limit,
	}
	if len(t.opts.Env) > 0 {
		cmd.Env = append(append([]string{}, t.opts.Env...), bashEnv...)
	}
	if filter != nil {
		cmd.Output = filter
	}
	if *target != nil {
		err = t.r.(ops.SpillRunner).RunSpill(ctx, cmd, (*target).s)
		if errors.Is(err, ops.ErrUnsupported) {
			// Not for this call (nothing ran): the tool saves the output.
			*target = nil
			err = t.r.Run(ctx, cmd)
		}
	} else {
		err = t.r.Run(ctx, cmd)
	}
	if filter != nil {
		if cerr := filter.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}
	if t.startedWithoutDir(ctx, err, cwd) {
		return timeoutText, false, missingWorkDir(cwd, err)
	}
	return timeoutText, true, err
}

// startedWithoutDir reports whether err is a failure to start because cwd
// is missing: the runner says so (a "chdir" PathError, the ops contract), or
// it reports some ENOENT and cwd is indeed gone (os/exec reports a failed
// chdir as "fork/exec <shell>: no such file or directory").
func (t *bashTool) startedWithoutDir(ctx context.Context, err error, cwd string) bool {
	var se *ops.StartError
	if !errors.As(err, &se) {
		return false
	}
	var pe *fs.PathError
	if errors.As(se.Err, &pe) && (pe.Op == "stat" || pe.Op == "confine") && pe.Path == cwd && checksDir(t.r) {
		// The runner's own check of the directory (or a confinement's),
		// in place of the Stat run skipped: any failure of it is a missing
		// directory, as there.
		return true
	}
	if !errors.Is(se.Err, fs.ErrNotExist) {
		return false
	}
	if errors.As(se.Err, &pe) && (pe.Op == "chdir" || pe.Path == cwd) {
		return true
	}
	if t.fsys == nil {
		return false
	}
	_, serr := t.fsys.Stat(ctx, cwd)
	return errors.Is(serr, fs.ErrNotExist)
}

// checksDir reports whether r checks Cmd.Dir before it starts anything
// (ops.DirCheckingRunner).
func checksDir(r ops.Runner) bool {
	dc, ok := r.(ops.DirCheckingRunner)
	return ok && dc.ChecksDir()
}

func missingWorkDir(cwd string, cause error) error {
	return &bashError{"Working directory does not exist: " + cwd + "\nCannot execute bash commands.", cause}
}

// parseTimeout checks the timeout argument as pi does and returns it as a
// duration (0: none) and as JavaScript prints the number.
func parseTimeout(v any) (time.Duration, string, error) {
	var sec float64
	switch x := v.(type) {
	case nil:
		return 0, "", nil
	case float64:
		sec = x
	case float32:
		sec = float64(x)
	case int:
		sec = float64(x)
	case int64:
		sec = float64(x)
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			sec = math.NaN()
		} else {
			sec = f
		}
	default:
		sec = math.NaN()
	}
	// pi refuses zero and negative timeouts with this same text (no
	// timeout is an absent one), and so does this tool.
	if math.IsNaN(sec) || math.IsInf(sec, 0) || sec <= 0 {
		return 0, "", errors.New("Invalid timeout: must be a finite number of seconds")
	}
	if sec*1000 > maxTimeoutMS {
		return 0, "", errors.New("Invalid timeout: maximum is 2147483.647 seconds")
	}
	// Node clamps delays below 1 ms to 1 ms; a zero Cmd.Timeout would mean
	// no timeout at all.
	d := max(time.Duration(sec*float64(time.Second)), time.Millisecond)
	return d, formatJSNumber(sec), nil
}

// timeoutStatus is "Command timed out after <x> seconds", plus pi 1.6's
// sentence when only background processes kept the output open.
func timeoutStatus(timeoutText string, e *ops.TimeoutError) string {
	if timeoutText == "" {
		timeoutText = formatJSNumber(e.Limit.Seconds())
	}
	s := "Command timed out after " + timeoutText + " seconds"
	// A shell that exited before the deadline ran for less than the limit;
	// anything else is a backend's confusion and would only mislead.
	if e.ShellExited && e.ShellRuntime >= 0 && e.ShellRuntime <= e.Limit {
		s += ". The shell exited with code " + strconv.Itoa(e.ShellExitCode) + " after " +
			strconv.FormatFloat(e.ShellRuntime.Seconds(), 'f', 1, 64) +
			" seconds, but background processes it started kept writing output until the timeout."
	}
	return s
}

// appendStatus is pi's "<text>\n\n<status>", or just the status.
func appendStatus(text, status string) string {
	if text == "" {
		return status
	}
	return text + "\n\n" + status
}

// spillResult is the spill file as the final message reports it.
type spillResult struct {
	path       string // "" when there is none
	err        error  // why the file could not be written
	incomplete error  // why the file at path lacks the end of the output
}

// formatBashOutput is pi's formatOutput: the tail text (or empty), plus the
// truncation notice and details when the output was truncated.
func formatBashOutput(snap truncation, full spillResult, lastLineBytes int64, empty string) (string, *bashDetails) {
	text := snap.Content
	if text == "" {
		text = empty
	}
	if !snap.Truncated {
		return text, nil
	}
	where := full.path
	if full.err != nil {
		// pi cannot get here (its temp file is local); say why there is no
		// file instead of pointing to an incomplete one.
		where = "not saved (" + full.err.Error() + ")"
	} else if full.incomplete != nil {
		where += " (incomplete: " + full.incomplete.Error() + ")"
	}
	details := &bashDetails{Truncation: &snap, FullOutputPath: full.path}
	startLine := snap.TotalLines - snap.OutputLines + 1
	endLine := strconv.Itoa(snap.TotalLines)
	var b strings.Builder
	b.WriteString(text)
	switch {
	case snap.LastLinePartial:
		b.WriteString("\n\n[Showing last " + formatSize(snap.OutputBytes) + " of line " + endLine +
			" (line is " + formatSize(int(lastLineBytes)) + "). Full output: " + where + "]")
	case snap.TruncatedBy == byLines:
		b.WriteString("\n\n[Showing lines " + strconv.Itoa(startLine) + "-" + endLine + " of " + endLine +
			". Full output: " + where + "]")
	default:
		b.WriteString("\n\n[Showing lines " + strconv.Itoa(startLine) + "-" + endLine + " of " + endLine +
			" (" + formatSize(defaultMaxBytes) + " limit). Full output: " + where + "]")
	}
	return b.String(), details
}

// formatJSNumber formats f as JavaScript's Number.prototype.toString does:
// 5 → "5", 0.2 → "0.2", 1e21 → "1e+21", 1e-7 → "1e-7".
func formatJSNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest round-trip digits, as ECMAScript's Number::toString picks.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mant, ".", "", 1)
	k, n := len(digits), exp+1
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	m := digits[:1]
	if k > 1 {
		m += "." + digits[1:]
	}
	es := "+"
	if n-1 < 0 {
		es = "-"
	}
	x := n - 1
	if x < 0 {
		x = -x
	}
	return sign + m + "e" + es + strconv.Itoa(x)
}
