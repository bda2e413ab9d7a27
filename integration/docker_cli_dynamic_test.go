package integration

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDockerCLIDynamicBuild: a CLI built the default Go way (go build with
// cgo: dynamically linked), with no pi-sandbox-shim next to it and no
// $PI_SANDBOX_SHIM_BIN, refuses a docker session with an error that names
// the binary, where it was looked for and the install line, instead of
// running without the shim; --no-helper asks for the fallback and runs.
func TestDockerCLIDynamicBuild(t *testing.T) {
	needImage(t, "pi-sandbox/busybox")
	if _, err := exec.LookPath("gcc"); err != nil {
		skipOrFail(t, "no C compiler: go build makes no dynamically linked binary here")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	dir := t.TempDir()
	bin := filepath.Join(dir, "pi-sandbox")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PI_SANDBOX_SHIM_BIN=") && !strings.HasPrefix(kv, "CGO_ENABLED=") {
			env = append(env, kv)
		}
	}
	build := exec.Command("go", "build", "-o", bin, "./cmd/pi-sandbox")
	build.Dir, build.Env = root, env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	dynamic := false
	for _, p := range f.Progs {
		dynamic = dynamic || p.Type == elf.PT_INTERP
	}
	f.Close()
	if !dynamic {
		t.Fatalf("go build made a static binary: the case needs a dynamic one")
	}
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	args := []string{"tool", "--backend", "docker", "--image", "pi-sandbox/busybox", "bash", `{"command":"true"}`}
	out, errs, code := run(args...)
	if code != 2 {
		t.Fatalf("dynamic build without the helper binary: exit %d (stdout %s, stderr %s), want the configuration refusal's 2", code, out, errs)
	}
	for _, want := range []string{
		"pi-sandbox-shim",
		"$PI_SANDBOX_SHIM_BIN: not set",
		filepath.Join(dir, "pi-sandbox-shim") + ": no such file",
		bin + " (this executable): dynamically linked",
		"CGO_ENABLED=0 go install github.com/pi-sandbox/pi-sandbox/cmd/pi-sandbox@latest github.com/pi-sandbox/pi-sandbox/cmd/pi-sandbox-shim@latest",
		"make build",
		"--no-helper",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	out, errs, code = run(append([]string{"tool", "--no-helper"}, args[1:]...)...)
	if code != 0 || !strings.Contains(out, `"isError":false`) {
		t.Fatalf("--no-helper: exit %d, stdout %s, stderr %s", code, out, errs)
	}
	if strings.Contains(errs, "note:") {
		t.Errorf("--no-helper asked for the fallback, yet stderr notes it: %s", errs)
	}
}
