package loop

import "testing"

func TestResultText(t *testing.T) {
	r := &Result{Content: []Content{Text("a"), Image("eA==", "image/png"), Text("b")}}
	if got := r.Text(); got != "a\nb" {
		t.Fatalf("Text() = %q, want %q", got, "a\nb")
	}
	if got := (&Result{}).Text(); got != "" {
		t.Fatalf("empty Text() = %q", got)
	}
}
