package tools

import (
	"encoding/json"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

func TestSchemasAndDescriptions(t *testing.T) {
	m := memfs.New()
	q := NewMutationQueue(m)
	for _, c := range []struct {
		tool interface {
			Name() string
			Label() string
			Description() string
			Parameters() json.RawMessage
		}
		name, schema, desc string
	}{
		{NewRead(m, m.Info()), "read",
			`{"type":"object","properties":{"path":{"type":"string","description":"Path to the file to read (relative or absolute)"},"offset":{"type":"number","description":"Line number to start reading from (1-indexed)"},"limit":{"type":"number","description":"Maximum number of lines to read"}},"required":["path"]}`,
			"Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete."},
		{NewWrite(m, m.Info(), q), "write",
			`{"type":"object","properties":{"path":{"type":"string","description":"Path to the file to write (relative or absolute)"},"content":{"type":"string","description":"Content to write to the file"}},"required":["path","content"]}`,
			"Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories."},
		{NewLs(m, m.Info()), "ls",
			`{"type":"object","properties":{"path":{"type":"string","description":"Directory to list (default: current directory)"},"limit":{"type":"number","description":"Maximum number of entries to return (default: 500)"}}}`,
			"List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to 500 entries or 50KB (whichever is hit first)."},
	} {
		if c.tool.Name() != c.name || c.tool.Label() != c.name {
			t.Errorf("%s: name %q label %q", c.name, c.tool.Name(), c.tool.Label())
		}
		if got := string(c.tool.Parameters()); got != c.schema || !json.Valid([]byte(got)) {
			t.Errorf("%s schema:\n got  %s\n want %s", c.name, got, c.schema)
		}
		if c.tool.Description() != c.desc {
			t.Errorf("%s description: %q", c.name, c.tool.Description())
		}
	}
	if got := string(objectSchema(boolParam("b", "x<y&z", false))); got != `{"type":"object","properties":{"b":{"type":"boolean","description":"x<y&z"}}}` {
		t.Errorf("no HTML escaping: %s", got)
	}
}
