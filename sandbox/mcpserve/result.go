package mcpserve

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

// toMCPResult maps a loop result: text and image blocks, isError, and pi's
// details under _meta["pi-sandbox/details"] (they are not structured
// content: there is no output schema, and clients show structured content
// instead of the text).
func toMCPResult(r *loop.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: r.IsError, Content: []mcp.Content{}}
	for _, c := range r.Content {
		switch c.Type {
		case "image":
			data, err := base64.StdEncoding.DecodeString(c.Data)
			if err != nil {
				out.Content = append(out.Content, &mcp.TextContent{Text: "[image with invalid base64 data]"})
				continue
			}
			out.Content = append(out.Content, &mcp.ImageContent{Data: data, MIMEType: c.MimeType})
		default:
			out.Content = append(out.Content, &mcp.TextContent{Text: c.Text})
		}
	}
	if r.Details != nil {
		if b, err := loop.MarshalNoEscape(r.Details); err == nil {
			b = leanDetails(b, r)
			if string(b) != "{}" && string(b) != "null" {
				out.Meta = mcp.Meta{"pi-sandbox/details": json.RawMessage(b)}
			}
		}
	}
	return out
}

// leanDetails drops from details (JSON) what repeats the result's text: a
// "content" string the text holds (pi's truncation record carries the
// text it kept). The rest of details is kept as it is.
func leanDetails(details []byte, r *loop.Result) []byte {
	var text strings.Builder
	for _, c := range r.Content {
		text.WriteString(c.Text)
	}
	dec := json.NewDecoder(bytes.NewReader(details))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return details
	}
	if !dropRepeated(v, text.String()) {
		return details
	}
	b, err := loop.MarshalNoEscape(v)
	if err != nil {
		return details
	}
	return b
}

// dropRepeated removes, in v and below, the "content" strings that text
// holds, and reports whether it removed any.
func dropRepeated(v any, text string) bool {
	dropped := false
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "content" && s != "" && strings.Contains(text, s) {
				delete(x, k)
				dropped = true
			} else if dropRepeated(e, text) {
				dropped = true
			}
		}
	case []any:
		for _, e := range x {
			if dropRepeated(e, text) {
				dropped = true
			}
		}
	}
	return dropped
}
