package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string  // build-output, build-fail
	Elapsed    float64 // seconds, on pass, fail and skip
}

type testKey struct{ pkg, name string }

type testState struct {
	out     []string // output lines, "=== RUN" and the like left out
	action  string   // pass, fail, skip; "" while running
	elapsed float64  // seconds, once it ended
}

// summary collects the events: it echoes what plain go test prints to w as
// they come and keeps each test's outcome for the final table.
type summary struct {
	w     io.Writer
	tests map[testKey]*testState
	order []testKey
	fails int // failed packages and builds
}

func newSummary(w io.Writer) *summary {
	return &summary{w: w, tests: map[testKey]*testState{}}
}

// read consumes the event stream. A line that is not JSON (go test's own
// messages on stdout) is echoed.
func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(s.w, "%s\n", line)
			continue
		}
		s.event(e)
	}
	return sc.Err()
}

var noise = regexp.MustCompile(`^\s*(=== (RUN|PAUSE|CONT|NAME)|--- (PASS|SKIP)|PASS$|ok\s)`)

func (s *summary) event(e event) {
	switch e.Action {
	case "build-output":
		io.WriteString(s.w, e.Output)
		return
	case "build-fail":
		s.fails++
		return
	}
	if e.Test == "" {
		// Package level: "ok pkg 1.2s", "FAIL pkg", "? pkg [no test
		// files]", and output outside any test (a panic, TestMain).
		switch e.Action {
		case "output":
			if !strings.HasPrefix(e.Output, "=== ") && e.Output != "PASS\n" {
				io.WriteString(s.w, e.Output)
			}
		case "fail":
			s.fails++
			s.unfinished(e.Package)
		}
		return
	}
	k := testKey{e.Package, e.Test}
	t := s.tests[k]
	if t == nil {
		t = &testState{}
		s.tests[k] = t
		s.order = append(s.order, k)
	}
	switch e.Action {
	case "output":
		if !strings.HasPrefix(strings.TrimSpace(e.Output), "=== ") {
			t.out = append(t.out, e.Output)
		}
	case "pass", "fail", "skip":
		t.action = e.Action
		t.elapsed = e.Elapsed
		if e.Action == "fail" {
			// As plain go test: a failing test's output, once it ends.
			for _, l := range t.out {
				if !noise.MatchString(l) || strings.HasPrefix(strings.TrimSpace(l), "--- FAIL") {
					io.WriteString(s.w, l)
				}
			}
		}
	}
}

// unfinished shows, for a package whose test binary failed, the tests that
// never ended (a crash, os.Exit, a kill): their output is all there is to
// tell why, and plain go test would have printed it as it came. At most the
// last 40 lines of each.
func (s *summary) unfinished(pkg string) {
	for _, k := range s.order {
		t := s.tests[k]
		if k.pkg != pkg || t.action != "" {
			continue
		}
		t.action = "fail"
		fmt.Fprintf(s.w, "--- UNFINISHED: %s (the test binary ended while it ran)\n", k.name)
		out := t.out
		if len(out) > 40 {
			fmt.Fprintf(s.w, "    [%d earlier lines left out]\n", len(out)-40)
			out = out[len(out)-40:]
		}
		for _, l := range out {
			if !noise.MatchString(l) {
				io.WriteString(s.w, l)
			}
		}
	}
}

func (s *summary) failed() bool {
	if s.fails > 0 {
		return true
	}
	for _, t := range s.tests {
		if t.action == "fail" {
			return true
		}
	}
	return false
}

// backends are the summary's rows, in order.
var backends = []string{"local", "docker", "ssh", "k8s"}

// backendOf classifies a test by its package path and name.
func backendOf(k testKey) string {
	n := strings.ToLower(k.pkg + " " + k.name)
	switch {
	case strings.Contains(n, "k8s") || strings.Contains(n, "kube"):
		return "k8s"
	case strings.Contains(n, "ssh"):
		return "ssh"
	case strings.Contains(n, "docker") || strings.Contains(n, "container") || strings.Contains(n, "testcontainers") || strings.Contains(n, "podman"):
		return "docker"
	}
	return "local"
}

var logPrefix = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// skipReason is the last message a skipped test logged, without its
// file:line prefix.
func skipReason(out []string) string {
	for i := len(out) - 1; i >= 0; i-- {
		l := strings.TrimRight(out[i], "\n")
		if strings.HasPrefix(strings.TrimSpace(l), "--- ") || strings.TrimSpace(l) == "" {
			continue
		}
		if loc := logPrefix.FindStringIndex(l); loc != nil {
			return strings.TrimSpace(l[loc[1]:])
		}
	}
	return "(no reason given)"
}

type tally struct {
	passed, failed, skipped int
	reasons                 map[string]int
}

// table counts leaf tests (a test with subtests is counted through them)
// per backend.
func (s *summary) table() map[string]*tally {
	parent := map[testKey]bool{}
	for _, k := range s.order {
		if i := strings.LastIndexByte(k.name, '/'); i >= 0 {
			for p := k.name[:i]; ; {
				parent[testKey{k.pkg, p}] = true
				j := strings.LastIndexByte(p, '/')
				if j < 0 {
					break
				}
				p = p[:j]
			}
		}
	}
	tab := map[string]*tally{}
	for _, b := range backends {
		tab[b] = &tally{reasons: map[string]int{}}
	}
	for _, k := range s.order {
		t := s.tests[k]
		if parent[k] && t.action != "fail" && t.action != "skip" {
			continue
		}
		if parent[k] && t.action == "fail" {
			continue // its failing subtests are counted
		}
		c := tab[backendOf(k)]
		switch t.action {
		case "pass":
			c.passed++
		case "fail":
			c.failed++
		case "skip":
			c.skipped++
			c.reasons[skipReason(t.out)]++
		}
	}
	return tab
}

// slowest is how many of the slowest tests print lists.
const slowest = 12

// printSlowest lists the tests, at most two levels deep (a suite and its
// backends), that took longest: what to look at when a run nears its
// timeout.
func (s *summary) printSlowest(w io.Writer) {
	var ks []testKey
	for _, k := range s.order {
		if strings.Count(k.name, "/") <= 1 && s.tests[k].action != "" {
			ks = append(ks, k)
		}
	}
	sort.SliceStable(ks, func(i, j int) bool { return s.tests[ks[i]].elapsed > s.tests[ks[j]].elapsed })
	if len(ks) > slowest {
		ks = ks[:slowest]
	}
	fmt.Fprintln(w, "\n--- slowest tests")
	for _, k := range ks {
		fmt.Fprintf(w, "%7.1fs %s %s\n", s.tests[k].elapsed, k.name, k.pkg)
	}
}

// print writes the slowest tests, the summary table and a verdict line.
func (s *summary) print(w io.Writer) {
	s.printSlowest(w)
	tab := s.table()
	fmt.Fprintln(w, "\n--- test summary, backend by backend")
	var untested []string
	for _, b := range backends {
		c := tab[b]
		fmt.Fprintf(w, "%-7s %5d passed, %d failed, %d skipped\n", b, c.passed, c.failed, c.skipped)
		type rc struct {
			r string
			n int
		}
		var rs []rc
		for r, n := range c.reasons {
			rs = append(rs, rc{r, n})
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].n > rs[j].n || rs[i].n == rs[j].n && rs[i].r < rs[j].r })
		for i, r := range rs {
			if i == 5 {
				fmt.Fprintf(w, "        ... and %d other reasons\n", len(rs)-5)
				break
			}
			reason := r.r
			if len(reason) > 160 {
				reason = reason[:157] + "..."
			}
			fmt.Fprintf(w, "        skipped %d: %s\n", r.n, reason)
		}
		switch {
		case c.passed+c.failed == 0:
			untested = append(untested, b+" (no test ran)")
		case c.skipped > 0:
			untested = append(untested, fmt.Sprintf("%s (%d skipped)", b, c.skipped))
		}
	}
	switch {
	case s.failed():
		fmt.Fprintln(w, "verdict: FAIL")
	case len(untested) > 0:
		fmt.Fprintf(w, "verdict: PASS, but not fully tested: %s — see the reasons above (CI=true makes them fail)\n", strings.Join(untested, ", "))
	default:
		fmt.Fprintln(w, "verdict: PASS, every backend tested")
	}
}
