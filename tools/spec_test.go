package tools

import (
	"bytes"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

// TestSpecsMatchTools: the listing is the tools' own names, descriptions
// and schemas, in All's order, and every schema property is a Param.
func TestSpecsMatchTools(t *testing.T) {
	ts := All(memfs.New())
	specs := Specs()
	if len(specs) != len(ts) {
		t.Fatalf("%d specs for %d tools", len(specs), len(ts))
	}
	for i, tool := range ts {
		s := specs[i]
		if s.Name != tool.Name() || s.Description != tool.Description() || !bytes.Equal(s.Parameters, tool.Parameters()) {
			t.Errorf("spec %d (%s) differs from tool %s", i, s.Name, tool.Name())
		}
		if s.Summary == "" {
			t.Errorf("%s: no summary", s.Name)
		}
		if got, ok := SpecByName(s.Name); !ok || got.Name != s.Name {
			t.Errorf("SpecByName(%q) = %v, %v", s.Name, got.Name, ok)
		}
	}
	if _, ok := SpecByName("nope"); ok {
		t.Error("SpecByName found nope")
	}
	read, _ := SpecByName("read")
	ps, err := read.Params()
	if err != nil {
		t.Fatal(err)
	}
	want := []Param{
		{"path", "string", true, "Path to the file to read (relative or absolute)"},
		{"offset", "number", false, "Line number to start reading from (1-indexed)"},
		{"limit", "number", false, "Maximum number of lines to read"},
	}
	if len(ps) != len(want) {
		t.Fatalf("read params %+v", ps)
	}
	for i := range want {
		if ps[i] != want[i] {
			t.Errorf("read param %d = %+v, want %+v", i, ps[i], want[i])
		}
	}
	edit, _ := SpecByName("edit")
	if ps, err := edit.Params(); err != nil || len(ps) != 2 || ps[1].Name != "edits" || ps[1].Type != "array" || !ps[1].Required {
		t.Errorf("edit params %+v, %v", ps, err)
	}
}
