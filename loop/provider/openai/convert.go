package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

// params builds the request: transcript, tools, system prompt, limits.
func (p *Provider) params(req *loop.Request) (sdk.ChatCompletionNewParams, error) {
	params := sdk.ChatCompletionNewParams{
		Model:         shared.ChatModel(p.cfg.Model),
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)},
	}
	if p.cfg.System != "" {
		params.Messages = append(params.Messages, sdk.SystemMessage(p.cfg.System))
	}
	params.Messages = append(params.Messages, convertMessages(req.Messages)...)
	if p.cfg.MaxTokens > 0 {
		// OpenAI's reasoning models take only max_completion_tokens; many
		// compatible servers know only max_tokens.
		if p.official {
			params.MaxCompletionTokens = sdk.Int(p.cfg.MaxTokens)
		} else {
			params.MaxTokens = sdk.Int(p.cfg.MaxTokens)
		}
	}
	if p.cfg.Thinking != "" {
		params.ReasoningEffort = shared.ReasoningEffort(p.cfg.Thinking)
	}
	for _, t := range req.Tools {
		var schema map[string]any
		if err := json.Unmarshal(t.Parameters(), &schema); err != nil {
			return params, fmt.Errorf("openai: tool %s: schema: %w", t.Name(), err)
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name(), Parameters: shared.FunctionParameters(schema)}
		if d := t.Description(); d != "" {
			fn.Description = sdk.String(d)
		}
		params.Tools = append(params.Tools, sdk.ChatCompletionFunctionTool(fn))
	}
	return params, nil
}

// convertMessages maps the transcript. Assistant messages that ended in
// error or abort are left out (as pi does), and so is thinking (servers do
// not take it back). Tool results are "tool" messages; the images among a
// run of them follow in one user message, as in pi.
func convertMessages(msgs []loop.Message) []sdk.ChatCompletionMessageParamUnion {
	var out []sdk.ChatCompletionMessageParamUnion
	var images []sdk.ChatCompletionContentPartUnionParam
	flush := func() {
		if len(images) > 0 {
			parts := append([]sdk.ChatCompletionContentPartUnionParam{sdk.TextContentPart("Attached image(s) from tool result:")}, images...)
			out = append(out, sdk.UserMessage(parts))
			images = nil
		}
	}
	for _, m := range msgs {
		switch m := m.(type) {
		case *loop.UserMessage:
			flush()
			if u, ok := userMessage(m.Content); ok {
				out = append(out, u)
			}
		case *loop.AssistantMessage:
			flush()
			if m.StopReason == loop.StopError || m.StopReason == loop.StopAborted {
				continue
			}
			if a, ok := assistantMessage(m.Content); ok {
				out = append(out, a)
			}
		case *loop.ToolResultMessage:
			var text []string
			for _, c := range m.Result.Content {
				switch c.Type {
				case "image":
					images = append(images, imagePart(c))
				default:
					text = append(text, c.Text)
				}
			}
			s := strings.Join(text, "\n")
			if s == "" && len(images) > 0 {
				s = "(see attached image)"
			}
			out = append(out, sdk.ToolMessage(s, m.ToolCallID))
		}
	}
	flush()
	return out
}

func imagePart(c loop.Content) sdk.ChatCompletionContentPartUnionParam {
	return sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: "data:" + c.MimeType + ";base64," + c.Data})
}

// userMessage is a plain string when the message is all text (every
// compatible server takes that), else text and image parts.
func userMessage(content []loop.Content) (sdk.ChatCompletionMessageParamUnion, bool) {
	var parts []sdk.ChatCompletionContentPartUnionParam
	var text []string
	hasImage := false
	for _, c := range content {
		switch c.Type {
		case "image":
			hasImage = true
			parts = append(parts, imagePart(c))
		default:
			if c.Text != "" {
				text = append(text, c.Text)
				parts = append(parts, sdk.TextContentPart(c.Text))
			}
		}
	}
	if len(parts) == 0 {
		return sdk.ChatCompletionMessageParamUnion{}, false
	}
	if !hasImage {
		return sdk.UserMessage(strings.Join(text, "\n")), true
	}
	return sdk.UserMessage(parts), true
}

func assistantMessage(parts []loop.Part) (sdk.ChatCompletionMessageParamUnion, bool) {
	a := &sdk.ChatCompletionAssistantMessageParam{}
	var text strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text":
			text.WriteString(p.Text)
		case "toolCall":
			args := string(p.Arguments)
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID:       p.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: p.Name, Arguments: args},
				},
			})
		}
	}
	if text.Len() == 0 && len(a.ToolCalls) == 0 {
		return sdk.ChatCompletionMessageParamUnion{}, false
	}
	if text.Len() > 0 {
		a.Content.OfString = sdk.String(text.String())
	}
	return sdk.ChatCompletionMessageParamUnion{OfAssistant: a}, true
}
