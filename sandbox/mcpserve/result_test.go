package mcpserve

import (
	"encoding/json"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

// TestLeanDetails: _meta's details drop the truncation record's copy of
// the text the result carries and keep everything else.
func TestLeanDetails(t *testing.T) {
	kept := "a.go\nb.go"
	res := loop.TextResult(kept+"\n\n[2 results limit reached. 50.0KB limit reached]", map[string]any{
		"resultLimitReached": 2,
		"truncation":         map[string]any{"content": kept, "truncated": true, "truncatedBy": "bytes", "outputLines": 2},
	})
	got := string(toMCPResult(res).Meta["pi-sandbox/details"].(json.RawMessage))
	want := `{"resultLimitReached":2,"truncation":{"outputLines":2,"truncated":true,"truncatedBy":"bytes"}}`
	if got != want {
		t.Errorf("details %s, want %s", got, want)
	}
	// Details that do not repeat the text are passed as they are.
	other := loop.TextResult("Successfully replaced text in f.", map[string]any{"diff": "-1 a\n+1 b", "content": "not in the text"})
	if got := string(toMCPResult(other).Meta["pi-sandbox/details"].(json.RawMessage)); got != `{"content":"not in the text","diff":"-1 a\n+1 b"}` {
		t.Errorf("details changed: %s", got)
	}
}
