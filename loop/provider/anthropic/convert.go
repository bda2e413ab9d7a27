package anthropic

import (
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/loop/provider"
)

// params builds the request: transcript, tools, system prompt, limits.
func (p *Provider) params(req *loop.Request) (sdk.MessageNewParams, error) {
	maxTokens := p.cfg.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	params := sdk.MessageNewParams{
		Model:     sdk.Model(p.cfg.Model),
		MaxTokens: maxTokens,
		Messages:  convertMessages(req.Messages),
	}
	if p.cfg.System != "" {
		params.System = []sdk.TextBlockParam{{Text: p.cfg.System, CacheControl: sdk.NewCacheControlEphemeralParam()}}
	}
	if budget, ok := thinkingBudget[p.cfg.Thinking]; ok {
		params.Thinking = sdk.ThinkingConfigParamOfEnabled(budget)
		params.MaxTokens += budget
	}
	for _, t := range req.Tools {
		tp, err := convertTool(t)
		if err != nil {
			return params, err
		}
		params.Tools = append(params.Tools, tp)
	}
	return params, nil
}

// convertTool declares a tool: name, description and its JSON Schema as
// input_schema (properties and required as such, other keywords kept).
func convertTool(t loop.Tool) (sdk.ToolUnionParam, error) {
	var schema map[string]any
	if err := json.Unmarshal(t.Parameters(), &schema); err != nil {
		return sdk.ToolUnionParam{}, fmt.Errorf("anthropic: tool %s: schema: %w", t.Name(), err)
	}
	in := sdk.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				in.Required = append(in.Required, s)
			}
		}
	}
	for k, v := range schema {
		switch k {
		case "type", "properties", "required":
		default:
			in.ExtraFields[k] = v
		}
	}
	tool := &sdk.ToolParam{Name: t.Name(), InputSchema: in}
	if d := t.Description(); d != "" {
		tool.Description = sdk.String(d)
	}
	return sdk.ToolUnionParam{OfTool: tool}, nil
}

// convertMessages maps the transcript. Assistant messages that ended in
// error or abort are left out (pi does the same); consecutive tool results
// become one user message. The last user message's last block gets a cache
// breakpoint, so a session's growing prefix is read from the cache.
func convertMessages(msgs []loop.Message) []sdk.MessageParam {
	var out []sdk.MessageParam
	var results []sdk.ContentBlockParamUnion
	flush := func() {
		if len(results) > 0 {
			out = append(out, sdk.NewUserMessage(results...))
			results = nil
		}
	}
	for _, m := range msgs {
		switch m := m.(type) {
		case *loop.UserMessage:
			flush()
			if blocks := userBlocks(m.Content); len(blocks) > 0 {
				out = append(out, sdk.NewUserMessage(blocks...))
			}
		case *loop.AssistantMessage:
			flush()
			if m.StopReason == loop.StopError || m.StopReason == loop.StopAborted {
				continue
			}
			if blocks := assistantBlocks(m.Content); len(blocks) > 0 {
				out = append(out, sdk.NewAssistantMessage(blocks...))
			}
		case *loop.ToolResultMessage:
			results = append(results, toolResult(m))
		}
	}
	flush()
	for i := len(out) - 1; i >= 0; i-- {
		if u := out[i].OfUser; u != nil && len(u.Content) > 0 {
			setCache(&u.Content[len(u.Content)-1])
			break
		}
	}
	return out
}

func setCache(b *sdk.ContentBlockParamUnion) {
	cc := sdk.NewCacheControlEphemeralParam()
	switch {
	case b.OfText != nil:
		b.OfText.CacheControl = cc
	case b.OfImage != nil:
		b.OfImage.CacheControl = cc
	case b.OfToolResult != nil:
		b.OfToolResult.CacheControl = cc
	}
}

func userBlocks(content []loop.Content) []sdk.ContentBlockParamUnion {
	var out []sdk.ContentBlockParamUnion
	for _, c := range content {
		switch c.Type {
		case "image":
			out = append(out, sdk.NewImageBlockBase64(c.MimeType, c.Data))
		default:
			if c.Text != "" {
				out = append(out, sdk.NewTextBlock(c.Text))
			}
		}
	}
	return out
}

func assistantBlocks(parts []loop.Part) []sdk.ContentBlockParamUnion {
	var out []sdk.ContentBlockParamUnion
	for _, p := range parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				out = append(out, sdk.NewTextBlock(p.Text))
			}
		case "thinking":
			switch {
			case p.Redacted:
				out = append(out, sdk.NewRedactedThinkingBlock(p.Signature))
			case p.Signature != "":
				out = append(out, sdk.NewThinkingBlock(p.Signature, p.Thinking))
			case p.Thinking != "":
				// Unsigned thinking (another provider's, or a script's)
				// cannot be sent as thinking: plain text keeps it.
				out = append(out, sdk.NewTextBlock(p.Thinking))
			}
		case "toolCall":
			args := json.RawMessage(p.Arguments)
			if !json.Valid(args) {
				args = provider.PartialJSON(args)
			}
			var obj map[string]any
			if json.Unmarshal(args, &obj) != nil || obj == nil {
				args = json.RawMessage(`{}`) // input must be an object
			}
			out = append(out, sdk.NewToolUseBlock(p.ID, args, p.Name))
		}
	}
	return out
}

// toolResult is a tool_result block: the result's text and images, as the
// API takes them; an image-only result gets a placeholder text, as in pi.
func toolResult(m *loop.ToolResultMessage) sdk.ContentBlockParamUnion {
	var content []sdk.ToolResultBlockParamContentUnion
	hasText := false
	for _, c := range m.Result.Content {
		switch c.Type {
		case "image":
			img := sdk.NewImageBlockBase64(c.MimeType, c.Data).OfImage
			content = append(content, sdk.ToolResultBlockParamContentUnion{OfImage: img})
		default:
			if c.Text != "" {
				hasText = true
				content = append(content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: c.Text}})
			}
		}
	}
	if !hasText && len(content) > 0 {
		content = append([]sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: "(see attached image)"}}}, content...)
	}
	block := &sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID, Content: content}
	if m.Result.IsError {
		block.IsError = sdk.Bool(true)
	}
	return sdk.ContentBlockParamUnion{OfToolResult: block}
}
