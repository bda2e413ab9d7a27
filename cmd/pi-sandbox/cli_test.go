package main

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop/looptest"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

// run runs the CLI in this process with an empty stdin.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runMain(context.Background(), args, stdio{strings.NewReader(""), &out, &errb})
	return code, out.String(), errb.String()
}

// visibleCommands are the commands the usage lists, with image's and
// pool's subcommands.
func visibleCommands() []string {
	var names []string
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return append(names, "image build", "image ls", "pool fill", "pool keep", "pool ls", "pool drain", "checkpoint ls", "checkpoint rm")
}

func TestHelpOnStdout(t *testing.T) {
	for _, name := range visibleCommands() {
		words := strings.Fields(name)
		for _, args := range [][]string{
			append(slices.Clone(words), "-h"),
			append(slices.Clone(words), "--help"),
			append([]string{"help"}, words...),
		} {
			code, out, errs := run(t, args...)
			if code != 0 || errs != "" {
				t.Errorf("%q: exit %d, stderr %q; want 0 and nothing", args, code, errs)
			}
			if words[0] == "image" && len(words) == 1 {
				if !strings.HasPrefix(out, "Usage: pi-sandbox image build|ls [flags] [NAME...]\n") {
					t.Errorf("%q: stdout %q", args, headLine(out))
				}
				continue
			}
			if words[0] == "pool" && len(words) == 1 {
				if !strings.HasPrefix(out, "Usage: pi-sandbox pool fill|keep|ls|drain [flags] [NAME]\n") {
					t.Errorf("%q: stdout %q", args, headLine(out))
				}
				continue
			}
			if !strings.HasPrefix(out, "Usage: pi-sandbox "+name) {
				t.Errorf("%q: first line %q, want Usage: pi-sandbox %s ...", args, headLine(out), name)
			}
			if name != "version" && name != "image ls" && name != "pool drain" && !strings.Contains(out, "\nFlags:\n  -") {
				t.Errorf("%q: no Flags: section:\n%s", args, out)
			}
		}
	}
}

func TestTopLevelUsage(t *testing.T) {
	code, out, errs := run(t)
	if code != 2 || out != "" || !strings.HasPrefix(errs, "Usage: pi-sandbox CMD [flags] ARGS\n") {
		t.Errorf("no arguments: exit %d, stdout %q, stderr %q; want 2 and the usage on stderr", code, out, headLine(errs))
	}
	for _, a := range []string{"-h", "--help", "help"} {
		code, out, errs := run(t, a)
		if code != 0 || errs != "" || !strings.HasPrefix(out, "Usage: pi-sandbox CMD [flags] ARGS\n") || !strings.Contains(out, "\n  tool ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", a, code, headLine(out), errs)
		}
	}
	code, out, errs = run(t, "frobnicate")
	if code != 2 || out != "" || errs != "pi-sandbox: unknown command \"frobnicate\"\nRun 'pi-sandbox -h' for usage\n" {
		t.Errorf("unknown command: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = run(t, "help", "frobnicate")
	if code != 2 || !strings.HasPrefix(errs, "pi-sandbox: unknown command \"frobnicate\"\n") {
		t.Errorf("help of an unknown command: exit %d, stderr %q", code, errs)
	}
}

func TestVersion(t *testing.T) {
	c1, v1, e1 := run(t, "--version")
	c2, v2, e2 := run(t, "version")
	if c1 != 0 || c2 != 0 || e1 != "" || e2 != "" || v1 != v2 || !strings.HasPrefix(v1, "pi-sandbox ") {
		t.Errorf("--version: %d %q %q; version: %d %q %q", c1, v1, e1, c2, v2, e2)
	}
}

// A usage error is one line and the pointer to -h, for every command.
func TestUsageErrorOneLine(t *testing.T) {
	for _, name := range visibleCommands() {
		args := append(strings.Fields(name), "--no-such-flag")
		code, out, errs := run(t, args...)
		want := "pi-sandbox " + name + ": flag provided but not defined: -no-such-flag\nRun 'pi-sandbox " + name + " -h' for usage\n"
		if code != 2 || out != "" || errs != want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q", args, code, out, errs, want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"up", "extra"}, "pi-sandbox up: unexpected arguments [\"extra\"]"},
		{[]string{"down"}, "pi-sandbox down: want at least one ID"},
		{[]string{"ls", "--backend", "moon"}, "pi-sandbox ls: --backend \"moon\": want docker or k8s"},
		{[]string{"gc", "--namespace", "x"}, "pi-sandbox gc: --kubeconfig, --context and --namespace need --backend k8s"},
		{[]string{"image"}, "pi-sandbox image: want build or ls"},
		{[]string{"image", "--nope", "build"}, "pi-sandbox image build: flag provided but not defined: -nope"},
		{[]string{"doctor", "--image", "x"}, "pi-sandbox doctor: --image needs --backend k8s"},
		{[]string{"up", "--memory", "2x"}, "pi-sandbox up: invalid value \"2x\" for flag -memory: want a positive size"},
		{[]string{"tool", "--backend", "moon", "read"}, "pi-sandbox tool: open: unknown backend \"moon\""},
		{[]string{"version", "x"}, "pi-sandbox version: takes no arguments"},
		// Flags after the arguments are parsed (the bad --backend is seen).
		{[]string{"down", "some-id", "--backend", "moon"}, "pi-sandbox down: --backend \"moon\": want docker or k8s"},
		// 2g is a size: the error is the backend's.
		{[]string{"up", "--memory", "2g", "--max-saved-output", "512M", "--backend", "moon"}, "pi-sandbox up: --backend \"moon\": want docker or k8s"},
	} {
		code, out, errs := run(t, c.args...)
		lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
		cmd, _, _ := strings.Cut(strings.TrimPrefix(c.want, "pi-sandbox "), ":")
		if code != 2 || out != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], c.want) || lines[1] != "Run 'pi-sandbox "+cmd+" -h' for usage" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q... plus the pointer to -h", c.args, code, out, errs, c.want)
		}
	}
}

// Every value flag's help line names a placeholder in capitals (DIR,
// HOST:TARGET[:ro], SIZE ...), never Go's "string" or "value" or a quoted
// word.
func TestHelpPlaceholders(t *testing.T) {
	flagLine := regexp.MustCompile(`^  -(\S+)(?: (.*))?$`)
	placeholder := regexp.MustCompile(`^[A-Z][A-Za-z0-9_:=\[\]./]*$`)
	for _, name := range visibleCommands() {
		_, out, _ := run(t, append(strings.Fields(name), "-h")...)
		for _, l := range strings.Split(out, "\n") {
			m := flagLine.FindStringSubmatch(l)
			if m == nil || m[2] == "" {
				continue
			}
			if !placeholder.MatchString(m[2]) {
				t.Errorf("%s -h: flag -%s has placeholder %q", name, m[1], m[2])
			}
		}
	}
	_, out, _ := run(t, "up", "-h")
	for _, want := range []string{"  -mount HOST:TARGET[:ro]\n", "  -label KEY=VALUE\n", "  -memory SIZE\n", "  -workdir DIR\n", "  -image IMAGE\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("up -h lacks %q", want)
		}
	}
	_, out, _ = run(t, "tool", "-h")
	for _, want := range []string{"  -container ID\n", "  -mount HOST:TARGET[:ro]\n", "  -env NAME\n", "  -runtime RUNTIME\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("tool -h lacks %q", want)
		}
	}
}

func TestSplitFlagsAnywhere(t *testing.T) {
	f := newFlagSet("x", "", stdio{})
	f.Bool("json", false, "")
	f.String("image", "", "")
	for _, c := range []struct {
		args, flags, pos []string
	}{
		{[]string{"a", "--json", "b"}, []string{"--json"}, []string{"a", "b"}},
		{[]string{"a", "--image", "img", "b"}, []string{"--image", "img"}, []string{"a", "b"}},
		{[]string{"--image=img", "a", "-json=false"}, []string{"--image=img", "-json=false"}, []string{"a"}},
		// "-" is stdin, a positional.
		{[]string{"-", "--json"}, []string{"--json"}, []string{"-"}},
		// "--" ends the flags.
		{[]string{"a", "--", "--json", "-"}, nil, []string{"a", "--json", "-"}},
		// A value flag takes the next word, "--" included, as flag does.
		{[]string{"--image", "--", "a"}, []string{"--image", "--"}, []string{"a"}},
		// An unknown flag stays a flag, for Parse to report.
		{[]string{"a", "--nope", "b"}, []string{"--nope"}, []string{"a", "b"}},
	} {
		flags, pos := f.split(c.args)
		if !slices.Equal(flags, c.flags) || !slices.Equal(pos, c.pos) {
			t.Errorf("split(%q) = %q, %q; want %q, %q", c.args, flags, pos, c.flags, c.pos)
		}
	}
}

// withTestTools makes the commands run on looptest's tools and records the
// configuration they open.
func withTestTools(t *testing.T) *open.Config {
	var got open.Config
	saved := openSession
	t.Cleanup(func() { openSession = saved })
	openSession = func(ctx context.Context, cfg open.Config) (*session, error) {
		got = cfg
		return &session{tools: testTools(&looptest.Gates{}), close: func() error { return nil }}, nil
	}
	return &got
}

func TestToolFlagsAfterArguments(t *testing.T) {
	withTestTools(t)
	for _, args := range [][]string{
		{"tool", "echo", `{"text":"x"}`, "--backend", "local"},
		{"tool", "echo", "--backend", "local", `{"text":"x"}`},
		{"tool", "--backend", "local", "echo", `{"text":"x"}`},
	} {
		code, out, errs := run(t, args...)
		if code != 0 || !strings.Contains(out, `"text":"x"`) || errs != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	// After "--", "-x" is the JSON argument, not a flag (and not valid JSON).
	code, _, errs := run(t, "tool", "echo", "--", "-x")
	if code != 2 || !strings.Contains(errs, "not valid JSON: -x") {
		t.Errorf("tool echo -- -x: exit %d, stderr %q", code, errs)
	}
}

func TestDockerFlagsImplyDocker(t *testing.T) {
	got := withTestTools(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--image", "img"}, "docker"},
		{[]string{"--container", "c1"}, "docker"},
		{[]string{"--image", "img", "--mount", "/tmp:/w"}, "docker"},
		{[]string{"--image", "img", "--backend", "k8s"}, "k8s"},
		{nil, "local"},
	} {
		args := append([]string{"tool", "echo", `{"text":"x"}`}, c.args...)
		if code, _, errs := run(t, args...); code != 0 {
			t.Errorf("%q: exit %d, stderr %q", args, code, errs)
			continue
		}
		if got.Backend != c.want {
			t.Errorf("%q: backend %q, want %q", args, got.Backend, c.want)
		}
	}
	// An explicit --backend local keeps refusing docker flags.
	code, _, errs := run(t, "tool", "--backend", "local", "--image", "img", "echo")
	if code != 2 || !strings.Contains(errs, "need --backend docker") {
		t.Errorf("--backend local --image: exit %d, stderr %q", code, errs)
	}
}

func TestSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{"512m": 512 << 20, "2g": 2 << 30, "1G": 1 << 30, "100k": 100 << 10, "1000000": 1000000, "-1": -1, "1t": 1 << 40} {
		var f sizeFlag
		if err := f.Set(in); err != nil || int64(f) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, f, err, want)
		}
	}
	for _, in := range []string{"", "0", "2x", "-2", "g", "1.5g", "99999999999t"} {
		var f sizeFlag
		if err := f.Set(in); err == nil {
			t.Errorf("Set(%q) = %d, want an error", in, f)
		}
	}
}

func headLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
