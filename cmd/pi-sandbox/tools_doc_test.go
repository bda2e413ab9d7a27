package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/tools"
)

var docRow = regexp.MustCompile("^\\| `([^`]+)` \\| (\\w+) \\| (yes|no) \\| .+ \\|$")

// TestToolsDocCoversSchemas: docs/tools.md has a section per tool with one
// table row per schema argument (name, type, required), and no row for an
// argument the schema does not have.
func TestToolsDocCoversSchemas(t *testing.T) {
	b, err := os.ReadFile("../../docs/tools.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := docSections(string(b))
	for _, s := range tools.Specs() {
		body, ok := sections[s.Name]
		if !ok {
			t.Errorf("docs/tools.md has no section ### %s", s.Name)
			continue
		}
		ps, err := s.Params()
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string][2]string{}
		for _, line := range strings.Split(body, "\n") {
			if m := docRow.FindStringSubmatch(line); m != nil {
				rows[m[1]] = [2]string{m[2], m[3]}
			}
		}
		for _, p := range ps {
			want := [2]string{p.Type, "no"}
			if p.Required {
				want[1] = "yes"
			}
			got, ok := rows[p.Name]
			switch {
			case !ok:
				t.Errorf("docs/tools.md: %s: no row for argument %s", s.Name, p.Name)
			case got != want:
				t.Errorf("docs/tools.md: %s %s: type/required %v, schema says %v", s.Name, p.Name, got, want)
			}
			delete(rows, p.Name)
		}
		for name := range rows {
			t.Errorf("docs/tools.md: %s: row for %s, which the schema does not have", s.Name, name)
		}
	}
}

// docSections maps each "### NAME" heading to the text up to the next heading.
func docSections(doc string) map[string]string {
	out := map[string]string{}
	name := ""
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "### "):
			name = strings.TrimSpace(strings.TrimPrefix(line, "### "))
		case strings.HasPrefix(line, "#"):
			name = ""
		case name != "":
			out[name] += line + "\n"
		}
	}
	return out
}

func TestDocRowPattern(t *testing.T) {
	if m := docRow.FindStringSubmatch("| `path` | string | yes | the file |"); m == nil || m[1] != "path" || m[2] != "string" || m[3] != "yes" {
		t.Errorf("docRow: %q", m)
	}
	if docRow.MatchString("| argument | type | required | meaning |") {
		t.Error("docRow matches the header")
	}
}
