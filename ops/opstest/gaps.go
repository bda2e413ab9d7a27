package opstest

import (
	"cmp"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Gaps are the cases a backend configuration is known not to meet, by case
// name ("Run/SetsidEscapeeDiesAtExit"), each with the reason its README
// entry gives.
type Gaps struct {
	// Fail lists cases that run and must fail: a pass fails the test, so a
	// gap that went away (a newer runtime) is noticed and its README entry
	// removed.
	Fail map[string]string
	// Skip lists cases that do not run: their outcome depends on the
	// machine's speed (a serialized runtime hitting a case's time limits),
	// so neither a pass nor a failure says anything.
	Skip map[string]string
}

// TestBackendWithGaps is [TestBackend] for a backend with known gaps. A
// name in gaps that is no case fails the test (the suite was renamed).
func TestBackendWithGaps(t *testing.T, newBackend func(t *testing.T) ops.Backend, gaps Gaps) {
	runSuite(t, allCases(), newBackend, gaps)
}

// runSuite runs cs, one subtest each, with gaps' ledger; gaps naming a case
// outside cs are not run.
func runSuite(t *testing.T, cs []testCase, newBackend func(t *testing.T) ops.Backend, gaps Gaps) {
	checkGaps(t, gaps)
	for _, tc := range cs {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := gaps.Skip[tc.name]; ok {
				t.Skip("known gap: " + why)
			}
			if !tc.serial {
				t.Parallel()
			}
			b := newBackend(t)
			ctx := watchdog(t, cmp.Or(tc.timeout, defaultTimeout))
			why, ok := gaps.Fail[tc.name]
			if !ok {
				tc.fn(t, ctx, b)
				return
			}
			rec := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				tc.fn(rec, ctx, b)
			}()
			<-done
			switch {
			case rec.Skipped():
				t.Skipf("known gap (%s), and the case skipped: %s", why, strings.Join(rec.log, "; "))
			case !rec.Failed():
				t.Errorf("known gap %q no longer fails: remove it (and its README entry)", why)
			default:
				t.Logf("known gap (%s) fails as expected: %s", why, strings.Join(rec.log, "; "))
			}
		})
	}
}

// recorder is a testing.TB that records failures instead of reporting
// them, so a case can be run against a broken backend and expected to fail.
// Cleanup, TempDir, Name and Context go to the real test.
type recorder struct {
	testing.TB
	mu      sync.Mutex
	failed  bool
	skipped bool
	log     []string
}

func (r *recorder) add(failed bool, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = r.failed || failed
	r.log = append(r.log, msg)
}

func (r *recorder) Helper()                   {}
func (r *recorder) Log(a ...any)              { r.add(false, fmt.Sprint(a...)) }
func (r *recorder) Logf(f string, a ...any)   { r.add(false, fmt.Sprintf(f, a...)) }
func (r *recorder) Error(a ...any)            { r.add(true, fmt.Sprint(a...)) }
func (r *recorder) Errorf(f string, a ...any) { r.add(true, fmt.Sprintf(f, a...)) }
func (r *recorder) Fail()                     { r.add(true, "Fail") }
func (r *recorder) FailNow()                  { r.add(true, "FailNow"); runtime.Goexit() }
func (r *recorder) Fatal(a ...any)            { r.Error(a...); runtime.Goexit() }
func (r *recorder) Fatalf(f string, a ...any) { r.Errorf(f, a...); runtime.Goexit() }
func (r *recorder) SkipNow()                  { r.mu.Lock(); r.skipped = true; r.mu.Unlock(); runtime.Goexit() }
func (r *recorder) Skip(a ...any)             { r.Log(a...); r.SkipNow() }
func (r *recorder) Skipf(f string, a ...any)  { r.Logf(f, a...); r.SkipNow() }

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *recorder) Skipped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}
