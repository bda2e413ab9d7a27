package opstest

import (
	"sort"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// coreCases are the cases [TestBackendCore] runs: each capability once —
// every FS method with its main error mapping, binary-safe and mode-keeping
// writes, exclusive and appending writers, names and environments that need
// quoting, exit codes and signal deaths, Env, Dir, stdin, timeouts,
// cancellation killing the process tree, the spill directory (Info/Sane),
// search and replace. Left out are the heavy cases, which stress what a
// backend's transport shares with its full-suite configurations rather
// than add a capability: large transfers and outputs, concurrency and
// races (WriteFile/Atomic, Run/Concurrent32, Replace/NoLostUpdate),
// flooding, many entries, deep trees, and the variants of a case already
// in the list (Exit255 beside ExitOne, SIGTERM beside SIGKILL, the setsid
// escapees beside CancelKillsTree).
var coreCases = map[string]bool{
	// Files: errors.
	"Open/NotExist":            true,
	"Stat/NotExist":            true,
	"Lstat/NotExist":           true,
	"ReadDir/NotExist":         true,
	"Access/NotExist":          true,
	"Remove/NotExist":          true,
	"RealPath/MissingParent":   true,
	"OpenWriter/MissingParent": true,
	"WriteFile/MissingParent":  true,
	"Open/Directory":           true,
	"Stat/FileAsDirectory":     true,
	"MkdirAll/OnFile":          true,
	"Open/Unreadable":          true,
	"Open/SymlinkLoop":         true,
	"Stat/NameTooLong":         true,
	"Remove/NonEmptyDir":       true,
	"CountLines/NotExist":      true,
	// Files: list, stat, links, access.
	"MkdirAll/Idempotent":        true,
	"Stat/File":                  true,
	"Stat/Directory":             true,
	"Stat/FollowsSymlink":        true,
	"Lstat/Symlink":              true,
	"ReadDir/SortedWithTypes":    true,
	"ReadDir/Empty":              true,
	"RealPath/SymlinkChain":      true,
	"RealPath/MissingLast":       true,
	"Access/ReadOnlyFile":        true,
	"Access/ExecMatchesShell":    true,
	"Remove/FileAndEmptyDir":     true,
	"CountLines/MatchesFallback": true,
	"Open/CloseEarly":            true,
	"Files/OddNames":             true,
	"Info/Sane":                  true,
	// Writes and edits.
	"WriteFile/AllByteValues":        true,
	"WriteFile/Empty":                true,
	"WriteFile/KeepsModeOnOverwrite": true,
	"WriteFile/NewFileMode":          true,
	"WriteFile/ThroughSymlink":       true,
	"WriteFile/OnDirectory":          true,
	"WriteFile/ReadOnlyFile":         true,
	"WriteFile/NoTempLeft":           true,
	"OpenWriter/ExclExisting":        true,
	"OpenWriter/Append":              true,
	"Replace/Conflict":               true,
	"WriteParents/Steps":             true,
	// Run.
	"Run/ExitZero":                 true,
	"Run/ExitOne":                  true,
	"Run/KilledBySIGKILL":          true,
	"Run/MergedOrder":              true,
	"Run/Env":                      true,
	"Run/BaseEnv":                  true,
	"Run/EnvWithNewlineAndUnicode": true,
	"Run/Dir":                      true,
	"Run/DirDefaultIsWorkDir":      true,
	"Run/MissingDir":               true,
	"Run/DirIsFile":                true,
	"Run/StdinAtEOF":               true,
	"Run/BinaryOutput":             true,
	"Run/Timeout":                  true,
	"Run/CancelWithCause":          true,
	"Run/CanceledBeforeStart":      true,
	"Run/CancelKillsTree":          true,
	"Run/TimeoutKillsTree":         true,
	// Search.
	"Grep/MatchesFallback": true,
	"Find/MatchesFallback": true,
}

// TestBackendCore runs the core cases (each capability once, without the
// heavy ones) with [TestBackendWithGaps]'s ledger, for a configuration
// that shares its transport with one that runs the whole suite: the
// fallback without the in-target helper. A gap naming a case outside the
// core is not run and not an error; one naming a core case is checked as
// in the whole suite.
func TestBackendCore(t *testing.T, newBackend func(t *testing.T) ops.Backend, gaps Gaps) {
	var cs []testCase
	for _, tc := range allCases() {
		if coreCases[tc.name] {
			cs = append(cs, tc)
		}
	}
	runSuite(t, cs, newBackend, gaps)
}

// checkGaps fails the test when gaps name a case the suite does not have
// (the suite was renamed).
func checkGaps(t *testing.T, gaps Gaps) {
	names := map[string]bool{}
	for _, tc := range allCases() {
		names[tc.name] = true
	}
	var unknown []string
	for _, m := range []map[string]string{gaps.Fail, gaps.Skip} {
		for n := range m {
			if !names[n] {
				unknown = append(unknown, n)
			}
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		t.Fatalf("opstest: gaps name no case: %s", strings.Join(unknown, ", "))
	}
}
