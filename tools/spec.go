package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Spec describes one tool for people: its name, a one-line summary, and
// pi's description and parameter schema exactly as the model gets them.
type Spec struct {
	Name        string
	Summary     string
	Description string
	Parameters  json.RawMessage
}

// Param is one argument of a tool, read from its parameter schema.
type Param struct {
	Name        string
	Type        string // the JSON Schema type: string, number, boolean, array
	Required    bool
	Description string // the schema's description, pi's text
}

// Specs returns the seven tools in pi's order (as All binds them).
func Specs() []Spec {
	return []Spec{
		{"read", "print a text file's lines (2000 lines or 50 KB per call; offset/limit page on) or an image", readDescription, readSchema},
		{"bash", "run a bash command; stdout and stderr, the last 2000 lines or 50 KB (the rest saved to a file)", bashDescription, bashSchema},
		{"edit", "replace exact, unique text in a file (one or more edits, matched against the original)", editDescription, editSchema},
		{"write", "write a file (created or overwritten, parent directories made)", writeDescription, writeSchema},
		{"grep", "search file contents for a regex or literal (100 matches or 50 KB; respects .gitignore)", grepDescription, grepSchema},
		{"find", "find files by glob pattern (1000 results or 50 KB; respects .gitignore)", findDescription, findSchema},
		{"ls", "list a directory, dotfiles included, '/' after directories (500 entries or 50 KB)", lsDescription, lsSchema},
	}
}

// SpecByName returns the tool called name.
func SpecByName(name string) (Spec, bool) {
	for _, s := range Specs() {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Params returns the tool's arguments in the schema's order.
func (s Spec) Params() ([]Param, error) {
	var top struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(s.Parameters, &top); err != nil {
		return nil, fmt.Errorf("tools: %s schema: %w", s.Name, err)
	}
	required := map[string]bool{}
	for _, r := range top.Required {
		required[r] = true
	}
	// Decode the properties token by token: a map would lose their order.
	dec := json.NewDecoder(bytes.NewReader(top.Properties))
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("tools: %s schema properties: %w", s.Name, err)
	}
	var ps []Param
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("tools: %s schema properties: %w", s.Name, err)
		}
		name, _ := tok.(string)
		var prop struct {
			Type        string `json:"type"`
			Description string `json:"description"`
		}
		if err := dec.Decode(&prop); err != nil {
			return nil, fmt.Errorf("tools: %s schema property %s: %w", s.Name, name, err)
		}
		ps = append(ps, Param{Name: name, Type: prop.Type, Required: required[name], Description: prop.Description})
	}
	return ps, nil
}
