// Package opstest is the conformance suite every ops backend runs: file
// semantics and errors, atomic writes, binary and UTF-8 safety, exit codes
// and signals, killing the whole process tree (an orphan holding stdout, a
// setsid escapee), timeouts, cancellation with a cause, concurrency and
// large output with bounded memory.
//
// A backend's test calls [TestBackend] with a factory:
//
//	func TestConformance(t *testing.T) {
//		opstest.TestBackend(t, func(t *testing.T) ops.Backend {
//			b, err := local.New(t.Context(), local.Config{WorkDir: t.TempDir()})
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { b.Close() })
//			return b
//		})
//	}
//
// [TestFS] runs the file cases alone, for a backend whose Run cannot run a
// shell (ops/memfs, with a small interpreter of the fixture commands).
//
// A backend configuration with documented gaps (gVisor, Podman) calls
// [TestBackendWithGaps]: the cases it names either must fail (a pass means
// the gap is gone) or are skipped with the reason (racy or speed-bound).
//
// A configuration that shares its transport with one running the whole
// suite (a backend's fallback without its in-target helper) calls
// [TestBackendCore]: the core cases, each capability once, with the same
// gap ledger.
//
// Every case gets a fresh backend and works in a fresh scratch directory
// under Info().WorkDir, which it removes afterwards. Cases use only the ops
// interfaces — shell commands run through Run are written for busybox sh as
// well as bash — so the same suite runs against containers and remote hosts.
// The target needs a POSIX shell and these commands (busybox has them
// all): cat, chmod, cut, head, id, kill, ln, ls, mkdir, printf, rm, sed,
// sleep (with fractions), test, umask, wc, yes, awk; setsid for the setsid
// cases, which skip without it. /proc must be mounted.
//
// Process-tree checks go through a second Run (kill -0, with zombies counted
// as dead). Each case has a watchdog: when it overruns, its context is
// canceled and the goroutines are dumped, instead of a silent hang.
package opstest
