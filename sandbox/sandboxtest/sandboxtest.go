// Package sandboxtest is the escape suite of the sandbox layer: attempts to
// reach files outside a confined sandbox through the real tools (.. chains,
// absolute paths, symbolic links and chains of them, links made by bash and
// then followed, NUL bytes, Unicode look-alikes, over-long paths). Every
// backend runs it with its own factory; each attempt must fail, must not
// show the outside file's content, and must leave everything outside the
// sandbox byte for byte and mtime for mtime as it was.
package sandboxtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// Target is a fresh backend for the suite.
type Target struct {
	// Backend is unconfined; its working directory is an empty directory
	// the suite may fill. The suite opens the sandbox on it and closes it.
	Backend ops.Backend
	// Outside is an existing, empty, writable directory on the target,
	// outside the working directory and the spill directory; the suite
	// puts the files it must not reach there. Its parent's entries are
	// watched too.
	Outside string
}

// Secret is the content of the outside file; no result may contain it.
const Secret = "TOP-SECRET-a81f3c"

// Kind is what an attempt must end in.
type Kind int

const (
	// Refused: an error result caused by the sandbox's confinement.
	Refused Kind = iota
	// Failed: an error result of any cause (a path that resolves inside
	// and does not exist, an invalid name).
	Failed
	// NoLeak: the call may succeed (a search inside the sandbox), but it
	// shows nothing of the outside.
	NoLeak
)

// Case is one attempt: setup calls that must succeed, then the attack.
type Case struct {
	Name  string
	Setup []Call
	Call  Call
	Want  Kind
}

// Call is one tool call; in Args, the strings "$W" and "$O" stand for the
// working directory and the outside directory, and "$RO" for the outside
// directory relative to the working directory.
type Call struct {
	Tool string
	Args map[string]any
}

func c(tool string, args ...any) Call {
	m := map[string]any{}
	for i := 0; i+1 < len(args); i += 2 {
		m[args[i].(string)] = args[i+1]
	}
	return Call{Tool: tool, Args: m}
}

// Cases returns the suite's attempts. The outside directory holds
// secret.txt (Secret), victim.txt, and dir/inner.txt; the working directory
// holds links made before the sandbox opens (see Run).
func Cases() []Case {
	long := strings.Repeat("x", 300)
	deep := strings.Repeat("a/../", 1500)
	return []Case{
		// .. chains and absolute paths.
		{"read dotdot", nil, c("read", "path", "$RO/secret.txt"), Refused},
		{"read dotdot from subdir", nil, c("read", "path", "sub/../../"+"$RO_BASE/secret.txt"), Refused},
		{"read absolute", nil, c("read", "path", "$O/secret.txt"), Refused},
		{"read long dotdot chain", nil, c("read", "path", "sub/"+deep+"../$RO/secret.txt"), Refused},
		{"read via proc root", nil, c("read", "path", "/proc/self/root$O/secret.txt"), Refused},
		{"write dotdot", nil, c("write", "path", "$RO/new.txt", "content", "pwned"), Refused},
		{"write absolute victim", nil, c("write", "path", "$O/victim.txt", "content", "pwned"), Refused},
		{"write absolute new dir", nil, c("write", "path", "$O/newdir/f.txt", "content", "pwned"), Refused},
		{"edit absolute", nil, c("edit", "path", "$O/victim.txt", "edits", []any{map[string]any{"oldText": "victim", "newText": "pwned"}}), Refused},
		// ls reports any failure to stat its directory as pi's "Path not
		// found"; the refusal is behind it, so these only require failure.
		{"ls dotdot", nil, c("ls", "path", ".."), Failed},
		{"ls absolute", nil, c("ls", "path", "$O"), Failed},
		{"ls spill dir's parent", nil, c("ls", "path", "$SPILL_PARENT"), Failed},
		{"grep dotdot", nil, c("grep", "pattern", Secret, "path", ".."), Refused},
		{"grep absolute", nil, c("grep", "pattern", Secret, "path", "$O"), Refused},
		{"find dotdot", nil, c("find", "pattern", "*.txt", "path", ".."), Refused},
		{"find absolute", nil, c("find", "pattern", "*", "path", "$O"), Refused},

		// Symbolic links made before the sandbox opened.
		{"read absolute link", nil, c("read", "path", "link-file"), Refused},
		{"read relative link", nil, c("read", "path", "link-rel"), Refused},
		{"read link chain", nil, c("read", "path", "chain1"), Refused},
		{"read through dir link", nil, c("read", "path", "link-dir/secret.txt"), Refused},
		{"read relative link in subdir", nil, c("read", "path", "sub/deep"), Refused},
		{"read dir link then dotdot", nil, c("read", "path", "link-dir/dir/../secret.txt"), Refused},
		{"write through file link", nil, c("write", "path", "link-victim", "content", "pwned"), Refused},
		{"write through dangling link", nil, c("write", "path", "dangling", "content", "pwned"), Refused},
		{"write through dir link", nil, c("write", "path", "link-dir/new.txt", "content", "pwned"), Refused},
		{"write through dir link, new subdir", nil, c("write", "path", "link-dir/nd/f.txt", "content", "pwned"), Refused},
		{"write through link chain", nil, c("write", "path", "chain1", "content", "pwned"), Refused},
		{"edit through link", nil, c("edit", "path", "link-victim", "edits", []any{map[string]any{"oldText": "victim", "newText": "pwned"}}), Refused},
		{"ls dir link", nil, c("ls", "path", "link-dir"), Failed},
		{"grep dir link", nil, c("grep", "pattern", Secret, "path", "link-dir"), Refused},
		{"find dir link", nil, c("find", "pattern", "*", "path", "link-dir"), Refused},
		{"grep workdir does not follow links", nil, c("grep", "pattern", Secret), NoLeak},
		{"find workdir does not follow links", nil, c("find", "pattern", "inner.txt"), NoLeak},
		{"ls workdir shows links only", nil, c("ls"), NoLeak},

		// Links made by bash inside the sandbox, then followed.
		{"bash link then read", []Call{c("bash", "command", "ln -s $O/secret.txt made-file")}, c("read", "path", "made-file"), Refused},
		{"bash dir link then write", []Call{c("bash", "command", "ln -s $O made-dir")}, c("write", "path", "made-dir/pwned.txt", "content", "pwned"), Refused},
		{"bash link then edit", []Call{c("bash", "command", "ln -s $O/victim.txt made-victim")}, c("edit", "path", "made-victim", "edits", []any{map[string]any{"oldText": "victim", "newText": "pwned"}}), Refused},
		{"bash relative chain then read", []Call{c("bash", "command", "ln -s $RO made-rel && ln -s made-rel/secret.txt made-chain")}, c("read", "path", "made-chain"), Refused},
		{"bash dangling link then write", []Call{c("bash", "command", "ln -s $O/created.txt made-dangling")}, c("write", "path", "made-dangling", "content", "pwned"), Refused},
		{"bash link in new subdir then grep", []Call{c("bash", "command", "mkdir -p m/n && ln -s $O m/n/out")}, c("grep", "pattern", Secret, "path", "m/n/out"), Refused},

		// Issue 17: links planted at the temporary names an old write
		// script used ($dir/.pi-sandbox-write.PID), and a FIFO that a read
		// without bounds waited on for good.
		{"write with links planted at temporary names", []Call{c("bash", "command", "i=$$; n=$((i+1500)); while [ $i -lt $n ]; do ln -s $O/victim.txt .pi-sandbox-write.$i; i=$((i+1)); done")}, c("write", "path", "planted.txt", "content", "fine"), NoLeak},
		{"read a FIFO", []Call{c("bash", "command", "mkfifo made-fifo")}, c("read", "path", "made-fifo"), Failed},

		// Odd names.
		{"read NUL byte", nil, c("read", "path", "link-file\x00.txt"), Failed},
		{"read NUL then dotdot", nil, c("read", "path", "x\x00/../$RO/secret.txt"), Failed},
		{"write NUL byte", nil, c("write", "path", "$O/victim.txt\x00", "content", "pwned"), Failed},
		{"read two dot leader", nil, c("read", "path", "\u2025/$RO_BASE/secret.txt"), Failed},
		{"read fullwidth dots", nil, c("read", "path", "\uff0e\uff0e/$RO_BASE/secret.txt"), Failed},
		{"read division slash", nil, c("read", "path", "..\u2215$RO_BASE\u2215secret.txt"), Failed},
		{"write fullwidth solidus", nil, c("write", "path", "..\uff0f$RO_BASE\uff0fvictim.txt", "content", "pwned"), NoLeak},
		{"read over-long name", nil, c("read", "path", strings.Repeat(long, 20)), Failed},
		{"write over-long path", nil, c("write", "path", strings.Repeat(long+"/", 20)+"f", "content", "x"), Failed},
	}
}

// Run opens a sandbox on newTarget's backend (confined to its working
// directory and spill directory) and runs every case as a subtest. The
// cases share the target: each uses its own names. After each case the
// outside directory is compared with its state before the first case, by
// a script run with the unconfined backend (find, sort, stat -c, md5sum,
// ls: coreutils or busybox).
func Run(t *testing.T, newTarget func(t *testing.T) Target) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tg := newTarget(t)
	raw := tg.Backend
	info := raw.Info()
	w, o := info.WorkDir, tg.Outside
	if err := setup(ctx, raw, w, o); err != nil {
		raw.Close()
		t.Fatal(err)
	}
	sb, err := sandbox.OpenBackend(ctx, raw, sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	l, err := sb.NewLoop()
	if err != nil {
		t.Fatal(err)
	}
	ro := relPath(w, o)
	vars := strings.NewReplacer("$RO_BASE", strings.TrimPrefix(ro, "../"), "$RO", ro, "$W", w, "$O", o, "$SPILL_PARENT", path.Dir(info.SpillDir))
	if !strings.HasPrefix(ro, "../") {
		t.Fatalf("sandboxtest: outside %s is not outside the working directory %s", o, w)
	}

	before, err := snapshot(ctx, raw, o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(before, "./dir/inner.txt") {
		t.Fatalf("sandboxtest: the snapshot misses the outside files:\n%s", before)
	}
	for i, tc := range Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			for j, s := range tc.Setup {
				res := run(ctx, l, fmt.Sprintf("s%d_%d", i, j), s, vars)
				if res.IsError {
					t.Fatalf("setup %s: %s", s.Tool, text(res))
				}
			}
			res := run(ctx, l, fmt.Sprintf("c%d", i), tc.Call, vars)
			got := text(res)
			if strings.Contains(got, Secret) || strings.Contains(got, "dir/inner.txt") {
				t.Errorf("the result shows the outside: %q", got)
			}
			switch tc.Want {
			case Refused:
				var ore *sandbox.OutsideRootError
				if !res.IsError || !errors.As(res.Err, &ore) && !strings.Contains(got, "outside the sandbox") {
					t.Errorf("not refused by confinement: isError %v, %q (err %v)", res.IsError, got, res.Err)
				}
			case Failed:
				if !res.IsError {
					t.Errorf("succeeded: %q", got)
				}
			}
			after, err := snapshot(ctx, raw, o)
			if err != nil {
				t.Fatal(err)
			}
			if d := diff(before, after); d != "" {
				t.Errorf("the outside changed:\n%s", d)
				before = after // blame the next change on its own case
			}
		})
	}
	t.Run("SwapRace", func(t *testing.T) {
		swapRace(t, ctx, raw, l, sb.Backend().Info(), w, o)
		after, err := snapshot(ctx, raw, o)
		if err != nil {
			t.Fatal(err)
		}
		if d := diff(before, after); d != "" {
			t.Errorf("the outside changed:\n%s", d)
		}
	})
}

// swapRace: while a command swaps a directory inside the sandbox with a
// symbolic link to the outside, read and write through it; a backend that
// checks a path and then uses it would sometimes reach the outside. Only
// for backends that confine in the target (capability "confine"); the
// check-then-use fallback says in the README that it does not cover this.
func swapRace(t *testing.T, ctx context.Context, raw ops.Backend, l *loop.Loop, confinedInfo ops.Info, w, o string) {
	if !confinedInfo.Has("confine") {
		t.Skip("the backend confines by a check before each operation (no helper): a link swapped between the check and the use is not covered")
	}
	q := shquote.Quote
	race := path.Join(w, "race")
	setup := "mkdir -p " + q(race+"/real") + " && printf inside > " + q(race+"/real/inside.txt") + " && ln -s " + q(path.Join(o, "dir")) + " " + q(race+"/link")
	if err := raw.Run(ctx, &ops.Cmd{Command: setup}); err != nil {
		t.Fatalf("setup: %v", err)
	}
	// rename(2) swaps atomically: real is a directory, then the link, then
	// the directory again.
	swap := "cd " + q(race) + " && i=0; while [ $i -lt 400 ]; do mv real dirx && mv link real && mv real link && mv dirx real; i=$((i+1)); done"
	done := make(chan error, 1)
	go func() { done <- raw.Run(ctx, &ops.Cmd{Command: swap, Timeout: 2 * time.Minute}) }()
	n := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("swapper: %v", err)
			}
			if n == 0 {
				t.Fatal("no call ran during the swaps")
			}
			t.Logf("%d calls during the swaps", n)
			return
		default:
		}
		n++
		for _, c := range []Call{
			{Tool: "read", Args: map[string]any{"path": "race/real/inner.txt"}},
			{Tool: "write", Args: map[string]any{"path": "race/real/new-" + fmt.Sprint(n) + ".txt", "content": "x"}},
			{Tool: "ls", Args: map[string]any{"path": "race/real"}},
		} {
			res := run(ctx, l, fmt.Sprintf("race%d", n), c, strings.NewReplacer())
			if got := text(res); strings.Contains(got, Secret) || (c.Tool == "ls" && strings.Contains(got, "inner.txt")) {
				t.Fatalf("call %d (%s) reached the outside: %q", n, c.Tool, got)
			}
		}
	}
}

func run(ctx context.Context, l *loop.Loop, id string, cl Call, vars *strings.Replacer) *loop.Result {
	args := subst(cl.Args, vars)
	raw, err := json.Marshal(args)
	if err != nil {
		return loop.ErrorResult(err)
	}
	b := l.RunBatch(ctx, nil, []loop.ToolCall{{ID: id, Name: cl.Tool, Arguments: raw}}, nil)
	return b.Results[0].Result
}

func subst(v any, r *strings.Replacer) any {
	switch x := v.(type) {
	case string:
		return r.Replace(x)
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = subst(e, r)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = subst(e, r)
		}
		return s
	}
	return v
}

func text(r *loop.Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// setup fills the outside directory and makes the links in the working
// directory with the unconfined backend.
func setup(ctx context.Context, b ops.Backend, w, o string) error {
	files := map[string]string{
		"secret.txt":    Secret + "\n",
		"victim.txt":    "victim\n",
		"dir/inner.txt": Secret + " inner\n",
	}
	for name, content := range files {
		p := path.Join(o, name)
		if err := b.MkdirAll(ctx, path.Dir(p), 0o755); err != nil {
			return err
		}
		if err := b.WriteFile(ctx, p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	ro := relPath(w, o)
	script := strings.Join([]string{
		"set -e",
		"mkdir -p sub",
		"ln -s " + shquote.Quote(o+"/secret.txt") + " link-file",
		"ln -s " + shquote.Quote(ro+"/secret.txt") + " link-rel",
		"ln -s " + shquote.Quote(o) + " link-dir",
		"ln -s " + shquote.Quote(o+"/victim.txt") + " link-victim",
		"ln -s " + shquote.Quote(o+"/created-by-dangling.txt") + " dangling",
		"ln -s chain2 chain1",
		"ln -s " + shquote.Quote(o+"/secret.txt") + " chain2",
		"ln -s " + shquote.Quote("../"+ro+"/secret.txt") + " sub/deep",
	}, "\n")
	var out strings.Builder
	if err := b.Run(ctx, &ops.Cmd{Command: script, Dir: w, Output: &out}); err != nil {
		return fmt.Errorf("sandboxtest: setup: %v: %s", err, out.String())
	}
	return nil
}

// relPath is the path of to relative to from (both absolute and clean).
func relPath(from, to string) string {
	f := strings.Split(strings.Trim(from, "/"), "/")
	g := strings.Split(strings.Trim(to, "/"), "/")
	i := 0
	for i < len(f) && i < len(g) && f[i] == g[i] {
		i++
	}
	var parts []string
	for range f[i:] {
		parts = append(parts, "..")
	}
	parts = append(parts, g[i:]...)
	return strings.Join(parts, "/")
}

// snapshotScript lists everything under the outside directory (the
// current directory): name, mode, mtime with nanoseconds and size of each
// entry, links not followed, an md5 of each regular file, then the names
// beside it. One command, so remote backends pay one round trip.
const snapshotScript = `find . -print | sort | while IFS= read -r f; do
  stat -c '%n|%f|%y|%s' "$f" || exit 1
  if [ -f "$f" ] && [ ! -L "$f" ]; then md5sum "$f" || exit 1; fi
done
ls -a ..`

func snapshot(ctx context.Context, b ops.Backend, o string) (string, error) {
	var out strings.Builder
	if err := b.Run(ctx, &ops.Cmd{Command: snapshotScript, Dir: o, Output: &out}); err != nil {
		return "", fmt.Errorf("sandboxtest: snapshot: %v: %s", err, out.String())
	}
	return out.String(), nil
}

// diff lists the lines only one of the snapshots has.
func diff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for _, l := range al {
		if !slices.Contains(bl, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range bl {
		if !slices.Contains(al, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
