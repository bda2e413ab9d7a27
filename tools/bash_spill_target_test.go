package tools

import (
	"context"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// spillFakeRunner is a runner that saves the output in the "target" itself
// (ops.SpillRunner), as the helper does: into fsys's file, with the
// thresholds of the request; create false keeps it from creating the file.
type spillFakeRunner struct {
	bashFakeRunner
	fsys        *bashMemFS
	create      bool
	unsupported bool
	spills      []*ops.Spill
}

func (r *spillFakeRunner) RunSpill(ctx context.Context, cmd *ops.Cmd, s *ops.Spill) error {
	if r.unsupported {
		return ops.ErrUnsupported
	}
	r.spills = append(r.spills, s)
	var saved []byte
	out := cmd.Output
	c := *cmd
	c.Output = writerFunc(func(p []byte) (int, error) {
		saved = append(saved, p...)
		return out.Write(p)
	})
	err := r.Run(ctx, &c)
	lines := int64(strings.Count(string(saved), "\n"))
	if r.create && (int64(len(saved)) > s.AfterBytes || lines > s.AfterLines) {
		w, werr := r.fsys.OpenWriter(ctx, s.Path, 0, 0o600)
		if werr == nil {
			w.Write(saved)
			w.Close()
			s.Created, s.Bytes = true, int64(len(saved))
		}
	}
	return err
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestBashTargetSpill: with a runner that saves the output in the target,
// the tool sends nothing there itself and names the runner's file.
func TestBashTargetSpill(t *testing.T) {
	fsys := newBashMemFS(bashWorkDir, bashSpillDir)
	out := bashLines(1, 3000)
	r := &spillFakeRunner{bashFakeRunner: bashFakeRunner{fn: bashEmitting(nil, out)}, fsys: fsys, create: true}
	res, err, _ := runBash(t, t.Context(), r, fsys, map[string]any{"command": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.spills) != 1 {
		t.Fatalf("RunSpill calls: %d", len(r.spills))
	}
	s := r.spills[0]
	if s.AfterBytes != defaultMaxBytes || s.AfterLines != defaultMaxLines || s.Cap != defaultSpillCap || !strings.Contains(s.CapNote, "not saved") {
		t.Errorf("spill request %+v", s)
	}
	path, data := onlySpill(t, fsys)
	if path != s.Path || string(data) != out {
		t.Errorf("spill %s (%d bytes), want %s (%d bytes)", path, len(data), s.Path, len(out))
	}
	if !strings.HasSuffix(res.Content[0].Text, "Full output: "+path+"]") {
		t.Errorf("text ends %q", bashTailOf(res.Content[0].Text, 200))
	}
}

// TestBashTargetSpillDecoded: an output the runner did not save (its
// thresholds count raw bytes; decoding made it too long to show) is saved
// by the tool, whole.
func TestBashTargetSpillDecoded(t *testing.T) {
	fsys := newBashMemFS(bashWorkDir, bashSpillDir)
	// 30,000 invalid bytes: 90,000 bytes once decoded, over the 50 KB.
	out := strings.Repeat("\xff", 30000)
	r := &spillFakeRunner{bashFakeRunner: bashFakeRunner{fn: bashEmitting(nil, out)}, fsys: fsys, create: true}
	res, err, _ := runBash(t, t.Context(), r, fsys, map[string]any{"command": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if r.spills[0].Created {
		t.Fatal("the fake runner created the file")
	}
	path, data := onlySpill(t, fsys)
	if string(data) != out {
		t.Errorf("spill holds %d bytes, want %d", len(data), len(out))
	}
	if !strings.Contains(res.Content[0].Text, "Full output: "+path) {
		t.Errorf("text ends %q", bashTailOf(res.Content[0].Text, 200))
	}
}

// TestBashTargetSpillFailed: a file the runner could not save is reported
// as not saved (the output is not sent back to be saved after all).
func TestBashTargetSpillFailed(t *testing.T) {
	fsys := newBashMemFS(bashWorkDir, bashSpillDir)
	r := &spillFakeRunner{fsys: fsys}
	r.bashFakeRunner.fn = func(ctx context.Context, cmd *ops.Cmd) error {
		cmd.Output.Write([]byte(bashLines(1, 3000)))
		r.spills[0].Err = ops.PathError("open", "/spill/x", ops.ENOSPC)
		return nil
	}
	res, err, _ := runBash(t, t.Context(), r, fsys, map[string]any{"command": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if names := fsys.names(); len(names) != 0 {
		t.Errorf("files %v", names)
	}
	if want := "Full output: not saved (open /spill/x: no space left on device)]"; !strings.HasSuffix(res.Content[0].Text, want) {
		t.Errorf("text ends %q", bashTailOf(res.Content[0].Text, 200))
	}
}

// TestBashTargetSpillUnsupported: a runner that cannot save for this call
// runs the command plainly and the tool saves the output.
func TestBashTargetSpillUnsupported(t *testing.T) {
	fsys := newBashMemFS(bashWorkDir, bashSpillDir)
	out := bashLines(1, 3000)
	r := &spillFakeRunner{bashFakeRunner: bashFakeRunner{fn: bashEmitting(nil, out)}, fsys: fsys, unsupported: true}
	res, err, _ := runBash(t, t.Context(), r, fsys, map[string]any{"command": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if r.ncalls() != 1 {
		t.Fatalf("Run calls: %d", r.ncalls())
	}
	path, data := onlySpill(t, fsys)
	if string(data) != out || !strings.HasSuffix(res.Content[0].Text, "Full output: "+path+"]") {
		t.Errorf("spill %d bytes; text ends %q", len(data), bashTailOf(res.Content[0].Text, 200))
	}
}
