package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func ev(action, pkg, test, output string) string {
	b, _ := json.Marshal(event{Action: action, Package: pkg, Test: test, Output: output})
	return string(b)
}

// stream is a go test -json run: local passes, a docker test skipped for
// want of an engine, an ssh subtest skipped, one ssh subtest passed.
var stream = strings.Join([]string{
	ev("run", "m/tools", "TestRead", ""),
	ev("output", "m/tools", "TestRead", "=== RUN   TestRead\n"),
	ev("output", "m/tools", "TestRead", "--- PASS: TestRead (0.00s)\n"),
	ev("pass", "m/tools", "TestRead", ""),
	ev("output", "m/tools", "", "PASS\n"),
	ev("output", "m/tools", "", "ok  \tm/tools\t0.1s\n"),
	ev("pass", "m/tools", "", ""),
	ev("run", "m/integration", "TestDockerConformance", ""),
	ev("output", "m/integration", "TestDockerConformance", "    docker_test.go:31: no Docker engine: connection refused\n"),
	ev("output", "m/integration", "TestDockerConformance", "--- SKIP: TestDockerConformance (0.00s)\n"),
	ev("skip", "m/integration", "TestDockerConformance", ""),
	ev("run", "m/integration", "TestParity", ""),
	ev("run", "m/integration", "TestParity/ssh", ""),
	ev("output", "m/integration", "TestParity/ssh", "    sshtest.go:88: no sshd: exec: \"sshd\": not found\n"),
	ev("skip", "m/integration", "TestParity/ssh", ""),
	ev("run", "m/integration", "TestParity/local", ""),
	ev("pass", "m/integration", "TestParity/local", ""),
	ev("pass", "m/integration", "TestParity", ""),
	ev("output", "m/integration", "", "ok  \tm/integration\t2.0s\n"),
	ev("pass", "m/integration", "", ""),
}, "\n") + "\n"

func TestSummary(t *testing.T) {
	var echo, sum strings.Builder
	s := newSummary(&echo)
	if err := s.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	s.print(&sum)
	if got, want := echo.String(), "ok  \tm/tools\t0.1s\nok  \tm/integration\t2.0s\n"; got != want {
		t.Errorf("echo %q, want %q", got, want)
	}
	for _, want := range []string{
		"local       2 passed, 0 failed, 0 skipped\n",
		"docker      0 passed, 0 failed, 1 skipped\n        skipped 1: no Docker engine: connection refused\n",
		"ssh         0 passed, 0 failed, 1 skipped\n        skipped 1: no sshd: exec: \"sshd\": not found\n",
		"verdict: PASS, but not fully tested: docker (no test ran), ssh (no test ran), k8s (no test ran)",
		"k8s         0 passed, 0 failed, 0 skipped\n",
	} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
	if s.failed() {
		t.Error("failed() on a passing run")
	}
}

func TestSummaryFailure(t *testing.T) {
	var echo, sum strings.Builder
	s := newSummary(&echo)
	in := strings.Join([]string{
		ev("run", "m/x", "TestA", ""),
		ev("output", "m/x", "TestA", "=== RUN   TestA\n"),
		ev("output", "m/x", "TestA", "    a_test.go:9: boom\n"),
		ev("output", "m/x", "TestA", "--- FAIL: TestA (0.00s)\n"),
		ev("fail", "m/x", "TestA", ""),
		ev("output", "m/x", "", "FAIL\n"),
		ev("output", "m/x", "", "FAIL\tm/x\t0.1s\n"),
		ev("fail", "m/x", "", ""),
	}, "\n")
	if err := s.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	s.print(&sum)
	if got, want := echo.String(), "    a_test.go:9: boom\n--- FAIL: TestA (0.00s)\nFAIL\nFAIL\tm/x\t0.1s\n"; got != want {
		t.Errorf("echo %q, want %q", got, want)
	}
	if !s.failed() || !strings.Contains(sum.String(), "local       0 passed, 1 failed") || !strings.Contains(sum.String(), "verdict: FAIL") {
		t.Errorf("summary:\n%s", sum.String())
	}
}

// TestRunExitStatus runs a real go test -json on a small package with a
// failing test: the status is go test's, and the summary counts it.
func TestRunExitStatus(t *testing.T) {
	out, code := runGoTest(t, "package m\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n\nfunc TestSSHSkip(t *testing.T) { t.Skip(\"no sshd here\") }\n\nfunc TestBad(t *testing.T) { t.Error(\"bad\") }\n")
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"--- FAIL: TestBad", "FAIL\texample.com/m", "local       1 passed, 1 failed, 0 skipped", "ssh         0 passed, 0 failed, 1 skipped\n        skipped 1: no sshd here", "verdict: FAIL"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestRunUnfinished: a test binary that ends inside a test (os.Exit, a
// crash, a kill) reports no failed test; the test that was running is shown
// with its output, and counted.
func TestRunUnfinished(t *testing.T) {
	out, code := runGoTest(t, "package m\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestOK(t *testing.T) {}\n\nfunc TestGone(t *testing.T) { fmt.Println(\"last words\"); os.Exit(3) }\n")
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"--- UNFINISHED: TestGone (the test binary ended while it ran)\nlast words\n", "local       1 passed, 1 failed", "verdict: FAIL"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// runGoTest runs testsum over a real go test -json of a package with one
// test file, and returns what it printed (stdout, then stderr) and its exit
// status.
func runGoTest(t *testing.T, testFile string) (string, int) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a test binary")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":    "module example.com/m\n\ngo 1.21\n",
		"m_test.go": testFile,
		"m.go":      "package m\n",
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		goBin = "go"
	}
	t.Chdir(dir)
	var out, errs strings.Builder
	code := run([]string{"--", goBin, "test", "-json", "-count=1", "."}, &out, &errs)
	return out.String() + errs.String(), code
}

// TestMakefile: `make test` (the README's test command, which .ci/run calls)
// builds the images when an engine is there and runs go test through this
// summary.
func TestMakefile(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	mk := string(b)
	i := strings.Index(mk, "\ntest: ")
	if i < 0 {
		t.Fatal("no test target in the Makefile")
	}
	recipe := mk[i:]
	if j := strings.Index(recipe[1:], "\n\n"); j >= 0 {
		recipe = recipe[:j+1]
	}
	for _, want := range []string{"image build $(TEST_IMAGES)", "./internal/testsum --", "test -json"} {
		if !strings.Contains(recipe, want) {
			t.Errorf("the test target lacks %q:\n%s", want, recipe)
		}
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), "\nmake test\n") {
		t.Error(".ci/run does not run make test")
	}
}

// TestBackendOf: the docker backend's tests on other engines count as
// docker, whatever their names say.
func TestBackendOf(t *testing.T) {
	for name, want := range map[string]string{
		"TestPodmanConformance/helper/Run/ExitZero": "docker",
		"TestDockerConformance/debian":              "docker",
		"TestK8sConformance":                        "k8s",
		"TestSSHConformance":                        "ssh",
		"TestRead":                                  "local",
	} {
		if got := backendOf(testKey{pkg: "m/integration", name: name}); got != want {
			t.Errorf("backendOf(%s) = %s, want %s", name, got, want)
		}
	}
}

// TestSlowest lists suites and their backends by time, deeper subtests
// left out, slowest first.
func TestSlowest(t *testing.T) {
	end := func(test string, sec float64) string {
		b, _ := json.Marshal(event{Action: "pass", Package: "m/integration", Test: test, Elapsed: sec})
		return string(b)
	}
	in := strings.Join([]string{
		end("TestFast", 0.5),
		end("TestSuite/docker/Read/Small", 90),
		end("TestSuite/docker", 100),
		end("TestSuite", 130),
		end("TestMiddle", 20),
	}, "\n") + "\n"
	var echo, sum strings.Builder
	s := newSummary(&echo)
	if err := s.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	s.print(&sum)
	want := "\n--- slowest tests\n" +
		"  130.0s TestSuite m/integration\n" +
		"  100.0s TestSuite/docker m/integration\n" +
		"   20.0s TestMiddle m/integration\n" +
		"    0.5s TestFast m/integration\n"
	if !strings.HasPrefix(sum.String(), want) {
		t.Errorf("summary begins\n%s\nwant\n%s", sum.String(), want)
	}
}
