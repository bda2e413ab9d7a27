package opstest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/internal/testenv"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/native"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/ops/search"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

func init() {
	// An exec.Cmd that is never waited for panics with its creation stack.
	os.Setenv("GODEBUG", "execwait=2")
}

func TestMain(m *testing.M) {
	shim.Dispatch()
	os.Exit(testenv.RunInTempDir(m))
}

// runCase runs the named case on b with a recorder, in its own goroutine
// (FailNow ends it with runtime.Goexit).
func runCase(t *testing.T, name string, b ops.Backend) *recorder {
	i := slices.IndexFunc(allCases(), func(c testCase) bool { return c.name == name })
	if i < 0 {
		t.Fatalf("no case %q", name)
	}
	rec := &recorder{TB: t}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		allCases()[i].fn(rec, ctx, b)
	}()
	<-done
	return rec
}

// newLocal opens the local backend, or with noShim the local operations
// without the shim (commands killed by process group only).
func newLocal(t *testing.T, noShim bool) ops.Backend {
	var b ops.Backend
	var err error
	if noShim {
		b, err = native.New(t.Context(), native.Config{WorkDir: t.TempDir(), NoShim: true})
	} else {
		b, err = local.New(t.Context(), local.Config{WorkDir: t.TempDir()})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// leaky runs commands with job control on, so every background job gets
// its own process group and the group kill misses the grandchildren.
type leaky struct{ ops.Backend }

func (l leaky) Run(ctx context.Context, c *ops.Cmd) error {
	cc := *c
	cc.Command = "set -m\n" + c.Command
	return l.Backend.Run(ctx, &cc)
}

// bareErrs returns os.ErrNotExist itself, without the *fs.PathError.
type bareErrs struct{ ops.Backend }

func bare(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return os.ErrNotExist
	}
	return err
}

func (b bareErrs) Open(ctx context.Context, n string) (io.ReadCloser, error) {
	r, err := b.Backend.Open(ctx, n)
	return r, bare(err)
}

func (b bareErrs) Stat(ctx context.Context, n string) (fs.FileInfo, error) {
	fi, err := b.Backend.Stat(ctx, n)
	return fi, bare(err)
}

func (b bareErrs) RealPath(ctx context.Context, n string) (string, error) {
	p, err := b.Backend.RealPath(ctx, n)
	return p, bare(err)
}

// demuxed sends stderr to a file and appends it after the command, like a
// transport that carries two streams and concatenates them.
type demuxed struct{ ops.Backend }

func (d demuxed) Run(ctx context.Context, c *ops.Cmd) error {
	errFile := d.Info().SpillDir + "/stderr-" + fmt.Sprint(time.Now().UnixNano())
	cc := *c
	cc.Command = "exec 2>" + shquote.Quote(errFile) + "\n" + c.Command
	err := d.Backend.Run(ctx, &cc)
	if data, rerr := ops.ReadFile(ctx, d.Backend, errFile); rerr == nil && c.Output != nil {
		c.Output.Write(data)
	}
	return err
}

// claimsShim says it has the shim but kills by process group only.
type claimsShim struct{ ops.Backend }

func (c claimsShim) Info() ops.Info {
	i := c.Backend.Info()
	i.Capabilities = append(i.Capabilities, "shim")
	return i
}

// reversed lists directories in reverse order.
type reversed struct{ ops.Backend }

func (r reversed) ReadDir(ctx context.Context, n string) ([]fs.DirEntry, error) {
	es, err := r.Backend.ReadDir(ctx, n)
	slices.Reverse(es)
	return es, err
}

// TestSuiteCatchesBrokenBackends runs cases against deliberately broken
// backends and requires them to fail, and against the real local backend
// and requires them to pass (so a failure is the breakage, not the case).
func TestSuiteCatchesBrokenBackends(t *testing.T) {
	for _, tt := range []struct {
		broken string
		wrap   func(ops.Backend) ops.Backend
		noShim bool
		cases  []string
	}{
		{"GrandchildSurvives", func(b ops.Backend) ops.Backend { return leaky{b} }, true,
			[]string{"Run/CancelKillsTree", "Run/BackgroundKilledAtExit"}},
		{"SetsidEscapes", func(b ops.Backend) ops.Backend { return claimsShim{b} }, true,
			[]string{"Run/SetsidEscapeeDiesOnCancel", "Run/SetsidEscapeeDiesAtExit"}},
		{"BareErrNotExist", func(b ops.Backend) ops.Backend { return bareErrs{b} }, false,
			[]string{"Open/NotExist", "Stat/NotExist", "RealPath/MissingParent"}},
		{"OutputReordered", func(b ops.Backend) ops.Backend { return demuxed{b} }, false,
			[]string{"Run/MergedOrder"}},
		{"ReadDirReversed", func(b ops.Backend) ops.Backend { return reversed{b} }, false,
			[]string{"ReadDir/SortedWithTypes"}},
	} {
		for _, name := range tt.cases {
			t.Run(tt.broken+"/"+name, func(t *testing.T) {
				t.Parallel()
				// The working backend has the shim whenever the case needs it.
				good := runCase(t, name, newLocal(t, tt.noShim && !strings.Contains(name, "Setsid")))
				if good.Failed() || good.Skipped() {
					t.Fatalf("case fails or skips on the working backend: %s", strings.Join(good.log, "\n"))
				}
				bad := runCase(t, name, tt.wrap(newLocal(t, tt.noShim)))
				if bad.Skipped() {
					t.Fatalf("case skipped on the broken backend: %s", strings.Join(bad.log, "\n"))
				}
				if !bad.Failed() {
					t.Fatalf("case passes on a backend that is broken (%s)", tt.broken)
				}
				t.Logf("caught: %s", strings.Join(bad.log, "; "))
			})
		}
	}
}

// TestCaseNamesUnique keeps the subtest names stable and distinct.
func TestCaseNamesUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range allCases() {
		if seen[c.name] || !strings.Contains(c.name, "/") {
			t.Errorf("bad or duplicate case name %q", c.name)
		}
		seen[c.name] = true
	}
	if len(seen) < 40 {
		t.Errorf("%d cases, want at least 40", len(seen))
	}
}

// searching offers GrepFS and FindFS through the shim's engine in the
// "target" (this test binary serves the shim), as docker and ssh do.
type searching struct {
	ops.Backend
	drop bool // broken: loses the last event
}

func (s searching) Grep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	var evs []ops.GrepEvent
	err := search.Remote{Runner: s.Backend, ShimPath: mustExe()}.Grep(ctx, q, func(ev ops.GrepEvent) error {
		evs = append(evs, ev)
		return nil
	})
	if s.drop && len(evs) > 0 {
		evs = evs[:len(evs)-1]
	}
	for _, ev := range evs {
		if err := fn(ev); err != nil {
			return err
		}
	}
	return err
}

func (s searching) Find(ctx context.Context, q *ops.FindQuery, fn func(rel string) error) error {
	return search.Remote{Runner: s.Backend, ShimPath: mustExe()}.Find(ctx, q, fn)
}

func mustExe() string {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return exe
}

func TestSearchCasesOnShimEngine(t *testing.T) {
	for _, name := range []string{"Grep/MatchesFallback", "Find/MatchesFallback"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := runCase(t, name, searching{Backend: newLocal(t, false)})
			if rec.Failed() || rec.Skipped() {
				t.Fatalf("fails or skips on the shim's engine: %s", strings.Join(rec.log, "\n"))
			}
		})
	}
	t.Run("Broken", func(t *testing.T) {
		t.Parallel()
		rec := runCase(t, "Grep/MatchesFallback", searching{Backend: newLocal(t, false), drop: true})
		if !rec.Failed() {
			t.Fatalf("passes on a grep that loses an event")
		}
	})
}

// TestWatchdogReportsHang runs, in a child test process, a case that blocks
// until its context is done, and checks that the watchdog cancels it and
// fails the test with a goroutine dump.
func TestWatchdogReportsHang(t *testing.T) {
	if os.Getenv("OPSTEST_WATCHDOG_CHILD") == "1" {
		ctx := watchdog(t, 300*time.Millisecond)
		<-ctx.Done() // a backend call that returns only when canceled
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestWatchdogReportsHang$", "-test.v", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), "OPSTEST_WATCHDOG_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "watchdog: not finished after 300ms") || !strings.Contains(string(out), "goroutine ") {
		t.Fatalf("child run: %v\n%s", err, out)
	}
}

// TestCoreCases keeps the core list to cases that exist and leaves out the
// heavy ones (a longer watchdog or run alone).
func TestCoreCases(t *testing.T) {
	byName := map[string]testCase{}
	for _, c := range allCases() {
		byName[c.name] = c
	}
	for n := range coreCases {
		c, ok := byName[n]
		switch {
		case !ok:
			t.Errorf("core case %q is no case", n)
		case c.serial || c.timeout != 0:
			t.Errorf("core case %q is a heavy one (serial %v, timeout %v)", n, c.serial, c.timeout)
		}
	}
	if len(coreCases) >= len(byName) {
		t.Errorf("%d core cases of %d: the core is no subset", len(coreCases), len(byName))
	}
}

// TestBackendCoreRunsOnlyCore: with every core case skipped as a gap, no
// case gets a backend, and a gap naming a case outside the core (here one
// that would fail) is accepted and not run.
func TestBackendCoreRunsOnlyCore(t *testing.T) {
	gaps := Gaps{Skip: map[string]string{}, Fail: map[string]string{"WriteFile/Atomic": "not in the core"}}
	for n := range coreCases {
		gaps.Skip[n] = "counted"
	}
	TestBackendCore(t, func(t *testing.T) ops.Backend {
		t.Errorf("%s ran: not a core case", t.Name())
		return nil
	}, gaps)
}
