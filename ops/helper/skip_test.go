package helper_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
	"github.com/pi-sandbox/pi-sandbox/tools"
)

// TestBashSkipParity: a long output through the helper, which saves it in
// the target and sends only its head, its last MiB and the counts of the
// rest (ops.Spill's Skip), gives the bash tool's result exactly as the
// whole output through the in-process backend does: text, totals, line and
// byte counts, structured output; the spill file holds every byte.
func TestBashSkipParity(t *testing.T) {
	dir := t.TempDir()
	// Multi-byte characters, invalid bytes and cut sequences at every
	// offset of every chunk.
	var mixed bytes.Buffer
	pieces := []string{"é", "€", "\xff", "\xe2\x82", "𝄞", "abc", "\n", "\xf0\x9f", "x", "\xed\xa0\x80", "\r\n"}
	for i := 0; mixed.Len() < 6<<20; i++ {
		mixed.WriteString(pieces[i%len(pieces)])
		if i%7 == 0 {
			mixed.WriteString(pieces[(i/7)%len(pieces)])
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "mixed"), mixed.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"ascii":    "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 20000000",
		"mixed":    "cat " + filepath.Join(dir, "mixed"),
		"one line": "head -c 6000000 /dev/zero | tr '\\0' x",
	}
	hb := open(t)
	hv, err := hb.(ops.Confiner).Confine(t.Context(), []ops.Root{{Path: dir}, {Path: hb.Info().SpillDir}})
	if err != nil {
		t.Fatal(err)
	}
	nb, err := local.New(t.Context(), local.Config{WorkDir: dir, NoHelper: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	if _, ok := ops.Backend(nb).(ops.SpillRunner); ok {
		if err := nb.RunSpill(t.Context(), &ops.Cmd{Command: "true"}, &ops.Spill{}); err == nil {
			t.Fatal("the in-process backend saves in the target")
		}
	}
	hinfo := hv.Info()
	hinfo.WorkDir = dir
	ninfo := nb.Info()
	run := func(b ops.Backend, info ops.Info, command string) (*loop.Result, string) {
		res, err := tools.NewBash(b, b, info).Execute(t.Context(), "c", map[string]any{"command": command}, nil)
		if err != nil {
			t.Fatal(err)
		}
		sc, _ := json.Marshal(res.StructuredContent)
		var m map[string]any
		json.Unmarshal(sc, &m)
		delete(m, "wall_time_seconds")
		delete(m, "full_output_path")
		d, _ := json.Marshal(res.Details)
		var dm map[string]any
		json.Unmarshal(d, &dm)
		path, _ := dm["fullOutputPath"].(string)
		if path == "" {
			t.Fatalf("no spill file: %s", d)
		}
		norm, _ := json.Marshal(map[string]any{"text": strings.ReplaceAll(res.Content[0].Text, path, "SPILL"), "details": strings.ReplaceAll(string(d), path, "SPILL"), "structured": m})
		return &loop.Result{Content: []loop.Content{loop.Text(string(norm))}}, path
	}
	for name, command := range cases {
		t.Run(name, func(t *testing.T) {
			got, spill := run(hv, hinfo, command)
			want, _ := run(nb, ninfo, command)
			if g, w := got.Content[0].Text, want.Content[0].Text; g != w {
				i := 0
				for i < len(g) && i < len(w) && g[i] == w[i] {
					i++
				}
				t.Errorf("differs at %d of %d/%d: through the helper %q…, in process %q…", i, len(g), len(w), g[max(0, i-80):min(len(g), i+120)], w[max(0, i-80):min(len(w), i+120)])
			}
			var full bytes.Buffer
			if err := nb.Run(t.Context(), &ops.Cmd{Command: command, Output: &full}); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(spill)
			if err != nil || !bytes.Equal(data, full.Bytes()) {
				t.Errorf("spill file %s: %d bytes (%v), want %d", spill, len(data), err, full.Len())
			}
		})
	}
}
