package sandbox

import (
	"context"
	"io"
	"io/fs"
	"net"
	"reflect"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
)

// fullBackend offers every optional capability of package ops (the core
// is left to the embedded nil Backend but for what the check-then-use view
// calls). Confine returns view, which offers them all too.
type fullBackend struct {
	ops.Backend
	view *fullBackend
	// noConfine: Confine is ops.ErrUnsupported (the check-then-use view
	// serves).
	noConfine bool
	calls     map[string]int
}

func (b *fullBackend) called(name string) {
	if b.calls == nil {
		b.calls = map[string]int{}
	}
	b.calls[name]++
}

func (b *fullBackend) Info() ops.Info {
	return ops.Info{Backend: "full", WorkDir: "/w", SpillDir: "/s"}
}
func (b *fullBackend) Close() error { return nil }

func (b *fullBackend) RealPath(_ context.Context, name string) (string, error) { return name, nil }

func (b *fullBackend) Lstat(_ context.Context, name string) (fs.FileInfo, error) {
	return nil, ops.PathError("lstat", name, ops.ENOENT)
}

func (b *fullBackend) Grep(context.Context, *ops.GrepQuery, func(ops.GrepEvent) error) error {
	b.called("Grep")
	return nil
}

func (b *fullBackend) Find(context.Context, *ops.FindQuery, func(string) error) error {
	b.called("Find")
	return nil
}

func (b *fullBackend) CountLines(context.Context, string) (int64, int64, error) {
	b.called("CountLines")
	return 0, 0, nil
}

func (b *fullBackend) ReplaceFile(context.Context, string, []byte, []byte) error {
	b.called("ReplaceFile")
	return nil
}

func (b *fullBackend) WriteFileParents(context.Context, string, []byte, fs.FileMode) error {
	b.called("WriteFileParents")
	return nil
}

func (b *fullBackend) OpenChecked(context.Context, string, ops.AccessMode) (fs.FileInfo, io.ReadCloser, error) {
	b.called("OpenChecked")
	return nil, nil, nil
}

func (b *fullBackend) ListDir(context.Context, string) (fs.FileInfo, []ops.ListEntry, error) {
	b.called("ListDir")
	return nil, nil, nil
}

func (b *fullBackend) RunSpill(context.Context, *ops.Cmd, *ops.Spill) error {
	b.called("RunSpill")
	return nil
}

func (b *fullBackend) ChecksDir() bool { return true }

func (b *fullBackend) Processes(context.Context) ([]ops.Process, error) {
	b.called("Processes")
	return nil, nil
}

func (b *fullBackend) DialTarget(context.Context, int) (net.Conn, error) {
	b.called("DialTarget")
	return nil, ops.ErrUnsupported
}

func (b *fullBackend) Checkpoint(context.Context, *ops.CheckpointOp, io.Writer) (*ops.CheckpointResult, error) {
	b.called("Checkpoint")
	return nil, nil
}

func (b *fullBackend) ListenTarget(context.Context) (net.Listener, error) {
	b.called("ListenTarget")
	return nil, ops.ErrUnsupported
}

func (b *fullBackend) Confine(context.Context, []ops.Root) (ops.Backend, error) {
	if b.noConfine {
		return nil, ops.ErrUnsupported
	}
	return b.view, nil
}

// TestToolsSeeEveryCapability: in every configuration the tools get the
// backend itself (or, confined, the view the backend returned), so no
// optional capability is lost on the way: the policy's environment and
// redaction are options of the bash tool, not wrappers.
func TestToolsSeeEveryCapability(t *testing.T) {
	t.Setenv("PI_TEST_SECRET", "secret-value")
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"confined", Config{}},
		{"unconfined", Config{Unconfined: true}},
		{"env policy", Config{Policy: Policy{Env: EnvPolicy{Allow: []string{"HOME"}, Set: map[string]string{"A": "1"}}}}},
		{"unconfined env policy", Config{Unconfined: true, Policy: Policy{Env: EnvPolicy{Allow: []string{}}}}},
		{"redaction", Config{Policy: Policy{Redact: RedactPolicy{Env: []string{"PI_TEST_SECRET"}, Patterns: []string{"ghp_[A-Za-z0-9]{36}"}}}}},
		{"unconfined redaction", Config{Unconfined: true, Policy: Policy{Redact: RedactPolicy{Patterns: []string{"ghp_[A-Za-z0-9]{36}"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &fullBackend{view: &fullBackend{}}
			sb, err := OpenBackend(context.Background(), b, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := ops.Backend(b.view)
			if tc.cfg.Unconfined {
				want = b
			}
			got := sb.Backend()
			if got != want {
				t.Errorf("the tools' backend is %T, want the backend's own (%T)", got, want)
			}
			for _, c := range opstest.Capabilities {
				if !reflect.TypeOf(got).Implements(c) {
					t.Errorf("the tools' backend %T lacks %v", got, c)
				}
			}
		})
	}
}

// TestCheckThenUseKeepsEveryCapability: the check-then-use view (a backend
// that does not confine itself) offers every capability of its backend
// but Confiner, and each call reaches the backend once its path passed.
func TestCheckThenUseKeepsEveryCapability(t *testing.T) {
	ctx := context.Background()
	b := &fullBackend{noConfine: true}
	sb, err := OpenBackend(ctx, b, Config{})
	if err != nil {
		t.Fatal(err)
	}
	v := sb.Backend()
	if _, ok := v.(*confined); !ok {
		t.Fatalf("the tools' backend is %T, want the check-then-use view", v)
	}
	for _, c := range opstest.Capabilities {
		if c != reflect.TypeFor[ops.Confiner]() && !reflect.TypeOf(v).Implements(c) {
			t.Errorf("the check-then-use view lacks %v", c)
		}
	}
	v.(ops.GrepFS).Grep(ctx, &ops.GrepQuery{Path: "/w"}, nil)
	v.(ops.FindFS).Find(ctx, &ops.FindQuery{Path: "/w"}, nil)
	v.(ops.LineCountFS).CountLines(ctx, "/w/f")
	v.(ops.ReplaceFS).ReplaceFile(ctx, "/w/f", nil, nil)
	v.(ops.WriteParentsFS).WriteFileParents(ctx, "/w/d/f", nil, 0o644)
	v.(ops.CheckedOpenFS).OpenChecked(ctx, "/w/f", ops.AccessRead)
	v.(ops.ListFS).ListDir(ctx, "/w")
	v.(ops.SpillRunner).RunSpill(ctx, &ops.Cmd{Dir: "/w"}, &ops.Spill{Path: "/s/out.log"})
	v.(ops.ProcessLister).Processes(ctx)
	v.(ops.TargetDialer).DialTarget(ctx, 80)
	v.(ops.CheckpointFS).Checkpoint(ctx, &ops.CheckpointOp{}, nil)
	v.(ops.TargetListener).ListenTarget(ctx)
	for _, m := range []string{"Grep", "Find", "CountLines", "ReplaceFile", "WriteFileParents", "OpenChecked", "ListDir", "RunSpill", "Processes", "DialTarget", "Checkpoint", "ListenTarget"} {
		if b.calls[m] != 1 {
			t.Errorf("%s reached the backend %d times, want 1", m, b.calls[m])
		}
	}
	if !v.(ops.DirCheckingRunner).ChecksDir() {
		t.Error("ChecksDir is not the backend's")
	}
	// A path outside the roots stops at the view.
	if _, _, err := v.(ops.CheckedOpenFS).OpenChecked(ctx, "/etc/passwd", ops.AccessRead); err == nil || b.calls["OpenChecked"] != 1 {
		t.Errorf("OpenChecked outside the roots: %v, %d calls", err, b.calls["OpenChecked"])
	}
}
