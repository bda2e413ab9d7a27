package loop

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// Content is one block of a result: text, or an image.
type Content struct {
	Type     string // "text" or "image"
	Text     string // for "text"
	Data     string // base64, for "image"
	MimeType string // for "image"
}

// Text returns a text block.
func Text(s string) Content { return Content{Type: "text", Text: s} }

// Image returns an image block.
func Image(base64Data, mimeType string) Content {
	return Content{Type: "image", Data: base64Data, MimeType: mimeType}
}

// MarshalJSON writes pi's shapes: {"type":"text","text":…} (text kept even
// when empty) or {"type":"image","data":…,"mimeType":…}.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Type == "image" {
		return MarshalNoEscape(struct {
			Type     string `json:"type"`
			Data     string `json:"data"`
			MimeType string `json:"mimeType"`
		}{c.Type, c.Data, c.MimeType})
	}
	return MarshalNoEscape(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{c.Type, c.Text})
}

// UnmarshalJSON reads either shape.
func (c *Content) UnmarshalJSON(b []byte) error {
	var v struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Content{Type: v.Type, Text: v.Text, Data: v.Data, MimeType: v.MimeType}
	return nil
}

// Result is a tool's result: pi's AgentToolResult plus isError.
type Result struct {
	Content []Content `json:"content"`
	// Details is tool-specific JSON; nil is omitted, an empty map is "{}".
	Details   any  `json:"details,omitempty"`
	IsError   bool `json:"isError"`
	Terminate bool `json:"terminate,omitempty"`
	// StructuredContent is pi 1.6's machine result (never shown to the model).
	StructuredContent any `json:"-"`
	// Err is the Go error behind an error result, when there was one. The
	// CLI uses it to tell a transport failure (ops.ErrTransport) from a tool
	// failure. It is not serialized.
	Err error `json:"-"`
}

// Text returns the result's text blocks joined by newlines (image blocks
// are left out): what a model reads of the result.
func (r *Result) Text() string {
	var b strings.Builder
	for _, c := range r.Content {
		if c.Type != "text" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(c.Text)
	}
	return b.String()
}

// TextResult returns a result with one text block.
func TextResult(s string, details any) *Result {
	return &Result{Content: []Content{Text(s)}, Details: details}
}

// ErrorResult returns pi's immediate error result: one text block, details
// {}, isError true.
func ErrorResult(err error) *Result {
	return &Result{
		Content: []Content{Text(err.Error())},
		Details: map[string]any{},
		IsError: true,
		Err:     err,
	}
}

// Errorf-free text helper for error results from plain text.
func ErrorText(s string) *Result { return ErrorResult(errors.New(s)) }

// MarshalNoEscape is json.Marshal without HTML escaping (pi's JSON.stringify
// writes "<", ">" and "&" literally) and without a trailing newline.
func MarshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
