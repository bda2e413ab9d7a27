package opstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

func runCases() []testCase {
	return []testCase{
		{name: "Run/LargeOutputBoundedMemory", fn: testLargeOutput, serial: true, timeout: 5 * time.Minute},
		{name: "Run/ExitZero", fn: testExit("true", 0, 0)},
		{name: "Run/ExitOne", fn: testExit("exit 1", 1, 0)},
		{name: "Run/Exit255", fn: testExit("echo x; exit 255", 255, 0)},
		{name: "Run/KilledBySIGKILL", fn: testExit("kill -9 $$", 137, 9)},
		{name: "Run/KilledBySIGTERM", fn: testExit("kill -TERM $$", 143, 15)},
		{name: "Run/MergedOrder", fn: testMergedOrder},
		{name: "Run/Env", fn: testEnv},
		{name: "Run/BaseEnv", fn: testBaseEnv},
		{name: "Run/Dir", fn: testDir},
		{name: "Run/DirDefaultIsWorkDir", fn: testDirDefault},
		{name: "Run/MissingDir", fn: testStartError("missing", ops.ENOENT)},
		{name: "Run/DirIsFile", fn: testStartError("file", ops.ENOTDIR)},
		{name: "Run/StdinAtEOF", fn: testStdin},
		{name: "Run/NilOutput", fn: testNilOutput},
		{name: "Run/BinaryOutput", fn: testBinaryOutput},
		{name: "Run/UTF8SplitAcrossChunks", fn: testUTF8Splits},
		{name: "Run/Concurrent32", fn: testConcurrent},
		{name: "Run/OutputAfterExit", fn: testOutputAfterExit},
		{name: "Run/Timeout", fn: testTimeout},
		{name: "Run/TimeoutAfterShellExit", fn: testTimeoutAfterShellExit},
		{name: "Run/CancelWithCause", fn: testCancelCause},
		{name: "Run/CanceledBeforeStart", fn: testCanceledBeforeStart},
	}
}

func testExit(command string, code, sig int) caseFunc {
	return func(t testing.TB, ctx context.Context, b ops.Backend) {
		err := b.Run(ctx, &ops.Cmd{Command: command})
		if code == 0 {
			if err != nil {
				t.Fatalf("Run(%q) = %v, want nil", command, err)
			}
			return
		}
		var ee *ops.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("Run(%q) = %v (%T), want *ops.ExitError", command, err, err)
		}
		if ee.Code != code || ee.Signal != sig {
			t.Fatalf("Run(%q) = ExitError{Code %d, Signal %d}, want {%d, %d}", command, ee.Code, ee.Signal, code, sig)
		}
	}
}

func testMergedOrder(t testing.TB, ctx context.Context, b ops.Backend) {
	out, err := run(ctx, b, "", "echo out; echo err >&2")
	if err != nil || out != "out\nerr\n" {
		t.Fatalf("output %q, %v; want \"out\\nerr\\n\"", out, err)
	}
	out, err = run(ctx, b, "", "for i in 1 2 3 4 5; do echo o$i; echo e$i >&2; done; printf 'no newline' >&2")
	want := "o1\ne1\no2\ne2\no3\ne3\no4\ne4\no5\ne5\nno newline"
	if err != nil || out != want {
		t.Fatalf("interleaved output %q, %v; want %q", out, err, want)
	}
}

func testEnv(t testing.TB, ctx context.Context, b ops.Backend) {
	var out bytes.Buffer
	err := b.Run(ctx, &ops.Cmd{
		Command: `printf '%s|%s|%s' "$OPSTEST_A" "$OPSTEST_B" "$HOME"`,
		Env:     []string{"OPSTEST_A=hello world", "OPSTEST_B=x=y 'q' \"d\" $z", "HOME=/opstest-home"},
		Output:  &out,
	})
	if want := `hello world|x=y 'q' "d" $z|/opstest-home`; err != nil || out.String() != want {
		t.Fatalf("env output %q, %v; want %q", out.String(), err, want)
	}
}

// shellSetEnv are variables a shell or the shim export by themselves, so
// they are in a command's environment whatever its base.
var shellSetEnv = map[string]bool{"PWD": true, "OLDPWD": true, "SHLVL": true, "_": true, "PATH": true, "GORACE": true}

// envNames runs env with base and extra and returns the names it printed.
func envNames(t testing.TB, ctx context.Context, b ops.Backend, base, extra []string) map[string]string {
	var out bytes.Buffer
	if err := b.Run(ctx, &ops.Cmd{Command: "env", BaseEnv: base, Env: extra, Output: &out}); err != nil {
		t.Fatalf("env (base %q): %v; output %q", base, err, out.String())
	}
	names := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k != "" && !strings.ContainsAny(k, " \t") {
			names[k] = v
		}
	}
	return names
}

// testBaseEnv: Cmd.BaseEnv replaces the backend's base environment (an
// empty list too), and Env still goes on top of it.
func testBaseEnv(t testing.TB, ctx context.Context, b ops.Backend) {
	def := envNames(t, ctx, b, nil, nil)
	var own []string // the backend's base, but what the shell sets itself
	for k := range def {
		if !shellSetEnv[k] {
			own = append(own, k)
		}
	}
	if len(own) == 0 {
		t.Fatalf("the backend's base environment is empty (env printed %v)", def)
	}
	for _, base := range [][]string{{"OPSTEST_BASE=b c", "OPSTEST_OVER=base"}, {}} {
		got := envNames(t, ctx, b, base, []string{"OPSTEST_OVER=env"})
		if got["OPSTEST_OVER"] != "env" {
			t.Errorf("base %q: Env on top: OPSTEST_OVER=%q, want env", base, got["OPSTEST_OVER"])
		}
		if wantBase := len(base) > 0; wantBase && got["OPSTEST_BASE"] != "b c" {
			t.Errorf("base %q: OPSTEST_BASE=%q, want %q", base, got["OPSTEST_BASE"], "b c")
		} else if _, ok := got["OPSTEST_BASE"]; !wantBase && ok {
			t.Errorf("an empty base: OPSTEST_BASE is set")
		}
		for _, k := range own {
			if _, ok := got[k]; ok {
				t.Errorf("base %q: the backend's own %s is still set", base, k)
			}
		}
	}
	// Nil keeps the backend's base.
	got := envNames(t, ctx, b, nil, nil)
	for _, k := range own {
		if _, ok := got[k]; !ok {
			t.Errorf("a nil base after replaced ones: the backend's %s is missing", k)
		}
	}
}

func testDir(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	real, err := b.RealPath(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if out := sh(t, ctx, b, dir, "pwd -P"); out != real+"\n" {
		t.Fatalf("pwd -P in Dir %s = %q, want %q", dir, out, real)
	}
}

func testDirDefault(t testing.TB, ctx context.Context, b ops.Backend) {
	real, err := b.RealPath(ctx, b.Info().WorkDir)
	if err != nil {
		t.Fatal(err)
	}
	if out := sh(t, ctx, b, "", "pwd -P"); out != real+"\n" {
		t.Fatalf("pwd -P without Dir = %q, want Info.WorkDir %q", out, real)
	}
}

func testStartError(kind string, code ops.Errno) caseFunc {
	return func(t testing.TB, ctx context.Context, b ops.Backend) {
		dir := scratch(t, ctx, b)
		cwd := dir + "/missing"
		if kind == "file" {
			cwd = dir + "/file"
			writeFile(t, ctx, b, cwd, "x")
		}
		var out bytes.Buffer
		err := b.Run(ctx, &ops.Cmd{Dir: cwd, Command: "echo ran > " + shquote.Quote(dir+"/ran"), Output: &out})
		var se *ops.StartError
		if !errors.As(err, &se) {
			t.Fatalf("Run in Dir %s = %v (%T), want *ops.StartError", cwd, err, err)
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) || ops.ErrnoOf(err) != code {
			t.Fatalf("StartError %v: want a *fs.PathError with %s, got errno %q", err, code, ops.ErrnoOf(err))
		}
		if code == ops.ENOENT && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("errors.Is(%v, fs.ErrNotExist) = false", err)
		}
		if ok, _ := ops.Exists(ctx, b, dir+"/ran"); ok {
			t.Fatalf("the command ran although its Dir is unusable")
		}
	}
}

func testStdin(t testing.TB, ctx context.Context, b ops.Backend) {
	start := time.Now()
	out, err := run(ctx, b, "", `cat; read x; echo "read=$?"`)
	if err != nil || out != "read=1\n" {
		t.Fatalf("output %q, %v; want stdin at EOF (read=1)", out, err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("cat took %s: stdin is not closed", d)
	}
}

func testNilOutput(t testing.TB, ctx context.Context, b ops.Backend) {
	if err := b.Run(ctx, &ops.Cmd{Command: "echo discarded; echo more >&2"}); err != nil {
		t.Fatal(err)
	}
}

// octal spells p as printf octal escapes.
func octal(p []byte) string {
	var sb strings.Builder
	for _, c := range p {
		fmt.Fprintf(&sb, `\%03o`, c)
	}
	return sb.String()
}

func testBinaryOutput(t testing.TB, ctx context.Context, b ops.Backend) {
	var want []byte
	for i := range 256 {
		want = append(want, byte(i))
	}
	var cmd strings.Builder
	for i := 0; i < 256; i += 32 {
		cmd.WriteString("printf '" + octal(want[i:i+32]) + "'; ")
	}
	out, err := run(ctx, b, "", cmd.String())
	if err != nil || out != string(want) {
		t.Fatalf("binary output differs (%d bytes, %v); want all 256 byte values in order", len(out), err)
	}
}

// chunkSink records the chunks it receives.
type chunkSink struct {
	mu     sync.Mutex
	chunks [][]byte
}

func (s *chunkSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chunks = append(s.chunks, bytes.Clone(p))
	return len(p), nil
}

// testUTF8Splits writes every split of 2-, 3- and 4-byte characters with a
// pause between the halves, so a chunk boundary falls inside the
// character, and checks the bytes arrive exactly.
func testUTF8Splits(t testing.TB, ctx context.Context, b ops.Backend) {
	var cmd strings.Builder
	var want []byte
	for _, ch := range []string{"é", "€", "😀"} {
		for cut := 1; cut < len(ch); cut++ {
			fmt.Fprintf(&cmd, "printf '%s'; sleep 0.03; printf '%s'; ", octal([]byte(ch[:cut])), octal([]byte(ch[cut:])))
			want = append(want, ch...)
		}
	}
	cmd.WriteString("echo")
	want = append(want, '\n')
	s := &chunkSink{}
	if err := b.Run(ctx, &ops.Cmd{Command: cmd.String(), Output: s}); err != nil {
		t.Fatal(err)
	}
	got := bytes.Join(s.chunks, nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	inside := 0
	off := 0
	for _, c := range s.chunks[:len(s.chunks)-1] {
		off += len(c)
		if off < len(got) && got[off]&0xC0 == 0x80 {
			inside++
		}
	}
	t.Logf("%d chunks, %d boundaries inside a character", len(s.chunks), inside)
}

// countSink counts bytes and samples the heap.
type countSink struct {
	n, writes int64
	peak      uint64
}

func (s *countSink) Write(p []byte) (int, error) {
	s.n += int64(len(p))
	s.writes++
	if s.writes%16 == 0 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s.peak = max(s.peak, ms.HeapAlloc)
	}
	return len(p), nil
}

func testLargeOutput(t testing.TB, ctx context.Context, b ops.Backend) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	const total = 100 << 20
	s := &countSink{}
	err := b.Run(ctx, &ops.Cmd{Command: fmt.Sprintf("head -c %d /dev/zero", total), Output: s})
	if err != nil {
		t.Fatal(err)
	}
	if s.n != total {
		t.Fatalf("sink received %d bytes, want %d", s.n, total)
	}
	growth := int64(s.peak) - int64(base)
	t.Logf("%d writes, heap growth at peak %d KiB", s.writes, growth>>10)
	if growth > 48<<20 {
		t.Fatalf("heap grew by %d MiB while streaming 100 MiB: output is buffered", growth>>20)
	}
}

func testConcurrent(t testing.TB, ctx context.Context, b ops.Backend) {
	var wg sync.WaitGroup
	errs := make([]string, 32)
	for i := range 32 {
		wg.Go(func() {
			var out bytes.Buffer
			err := b.Run(ctx, &ops.Cmd{
				Command: `echo "n=$N"; echo "e=$N" >&2; exit $((N % 4))`,
				Env:     []string{fmt.Sprintf("N=%d", i)},
				Output:  &out,
			})
			want := fmt.Sprintf("n=%d\ne=%d\n", i, i)
			code := 0
			var ee *ops.ExitError
			if errors.As(err, &ee) {
				code = ee.Code
			} else if err != nil {
				code = -1
			}
			if out.String() != want || code != i%4 {
				errs[i] = fmt.Sprintf("run %d: output %q, err %v; want %q, exit %d", i, out.String(), err, want, i%4)
			}
		})
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
}

// testOutputAfterExit: output written 50ms after the shell exited is still
// captured (ops.ExitGrace is 100ms). A loaded machine can delay the late
// write past the grace (gVisor's fork and exec of sleep under load did, three
// times in a row), so one success in five attempts passes; a backend that
// stops reading at exit never succeeds.
func testOutputAfterExit(t testing.TB, ctx context.Context, b ops.Backend) {
	var outs []string
	for range 5 {
		out, err := run(ctx, b, "", "(sleep 0.05; echo late) & echo early")
		if err != nil {
			t.Fatal(err)
		}
		if out == "early\nlate\n" {
			return
		}
		outs = append(outs, out)
	}
	t.Fatalf("outputs %q; want early and late (ops.ExitGrace)", outs)
}

func testTimeout(t testing.TB, ctx context.Context, b ops.Backend) {
	start := time.Now()
	err := b.Run(ctx, &ops.Cmd{Command: "sleep 300", Timeout: 500 * time.Millisecond})
	d := time.Since(start)
	var te *ops.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("Run = %v (%T), want *ops.TimeoutError", err, err)
	}
	if te.Limit != 500*time.Millisecond || te.ShellExited {
		t.Fatalf("TimeoutError = %+v, want Limit 500ms and the shell still running", te)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(%v, context.DeadlineExceeded) = false", err)
	}
	if d > 15*time.Second {
		t.Fatalf("timeout took %s", d)
	}
}

// testTimeoutAfterShellExit: the shell exits 3 but a background process
// keeps writing, so the exit grace keeps being re-armed until the timeout.
// On a starved machine the writer can pause longer than the grace, which
// legitimately ends the call, or the shell's exit can come after the
// timeout; one timeout with the shell's exit in three attempts passes.
func testTimeoutAfterShellExit(t testing.TB, ctx context.Context, b ops.Backend) {
	var errs []error
	for range 3 {
		err := b.Run(ctx, &ops.Cmd{
			Command: "yes tick & sleep 0.1; exit 3",
			Timeout: 1500 * time.Millisecond,
		})
		var te *ops.TimeoutError
		if !errors.As(err, &te) || !te.ShellExited {
			errs = append(errs, err)
			continue
		}
		if te.ShellExitCode != 3 || te.ShellRuntime <= 0 || te.ShellRuntime >= te.Limit {
			t.Fatalf("TimeoutError = %+v, want ShellExited with code 3 and a runtime below the limit", te)
		}
		return
	}
	t.Fatalf("Run = %v, want a *ops.TimeoutError after the shell's exit", errs)
}

func testCancelCause(t testing.TB, ctx context.Context, b ops.Backend) {
	err, cause, d := startThenCancel(t, ctx, b, &ops.Cmd{Command: "echo ready; sleep 300"})
	if d > 10*time.Second {
		t.Errorf("Run returned %s after cancel", d)
	}
	if !errors.Is(err, cause) || !errors.Is(err, ops.ErrCanceled) {
		t.Fatalf("Run = %v; want errors.Is the cause and ops.ErrCanceled", err)
	}
}

// startThenCancel runs cmd (which prints "ready" once set up), cancels it
// with a fresh cause after the marker arrived, and returns Run's error, the
// cause, and how long Run took to return after the cancel. cmd.Output is
// set to the marker sink.
func startThenCancel(t testing.TB, ctx context.Context, b ops.Backend, cmd *ops.Cmd) (err, cause error, after time.Duration) {
	t.Helper()
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sink := newMarkSink("ready\n")
	cmd.Output = sink
	errc := make(chan error, 1)
	go func() { errc <- b.Run(cctx, cmd) }()
	select {
	case <-sink.ready:
	case err := <-errc:
		t.Fatalf("Run ended before cancel: %v (output %q)", err, sink.String())
	case <-ctx.Done():
		t.Fatalf("no ready marker: output %q", sink.String())
	}
	cause = errors.New("opstest: the user pressed stop")
	start := time.Now()
	cancel(cause)
	err = waitErr(t, ctx, errc)
	return err, cause, time.Since(start)
}

func testCanceledBeforeStart(t testing.TB, ctx context.Context, b ops.Backend) {
	dir := scratch(t, ctx, b)
	cctx, cancel := context.WithCancelCause(ctx)
	cause := errors.New("opstest: early")
	cancel(cause)
	err := b.Run(cctx, &ops.Cmd{Dir: dir, Command: "echo x > ran"})
	if !errors.Is(err, cause) || !errors.Is(err, ops.ErrCanceled) {
		t.Fatalf("Run = %v; want errors.Is the cause and ops.ErrCanceled", err)
	}
	if ok, _ := ops.Exists(ctx, b, dir+"/ran"); ok {
		t.Fatalf("the command ran on a canceled context")
	}
}

func waitErr(t testing.TB, ctx context.Context, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		t.Fatalf("Run did not return: %v", context.Cause(ctx))
		return nil
	}
}
