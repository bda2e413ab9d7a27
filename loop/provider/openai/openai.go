package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/loop/provider"
)

// Config configures a Provider.
type Config struct {
	// Model is passed through as given ("gpt-5", "qwen3:8b", ...).
	Model string
	// APIKey is sent as a bearer token. It may be empty only with a base
	// URL (local servers often need none).
	APIKey string
	// BaseURL overrides the endpoint (an OpenAI-compatible server's
	// .../v1). Empty: OPENAI_BASE_URL if set (as the SDK does), else
	// https://api.openai.com/v1.
	BaseURL string
	// System is the system prompt (empty: none).
	System string
	// MaxTokens limits the reply (zero: the server's default).
	MaxTokens int64
	// Thinking is "", "low", "medium" or "high": reasoning_effort.
	Thinking string
	// MaxRetries overrides the SDK's retry count (nil: its default, 2).
	MaxRetries *int
	// HTTPClient replaces the SDK's HTTP client (tests).
	HTTPClient *http.Client
}

// Provider streams replies from a Chat Completions endpoint. It is safe
// for concurrent use.
type Provider struct {
	cfg      Config
	official bool // no base URL: api.openai.com
	client   sdk.Client
}

// New makes a Provider.
func New(cfg Config) (*Provider, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: no model given")
	}
	base := cfg.BaseURL
	if base == "" {
		base = os.Getenv("OPENAI_BASE_URL")
	}
	if cfg.APIKey == "" && base == "" {
		return nil, errors.New("openai: no API key (set OPENAI_API_KEY, or give --base-url for a server that needs none)")
	}
	switch cfg.Thinking {
	case "", "low", "medium", "high":
	default:
		return nil, fmt.Errorf("openai: thinking level %q (want low, medium or high)", cfg.Thinking)
	}
	// The environment is not read for the key: it comes from cfg only.
	opts := []option.RequestOption{option.WithAPIKey(cfg.APIKey)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.MaxRetries != nil {
		opts = append(opts, option.WithMaxRetries(*cfg.MaxRetries))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Provider{cfg: cfg, official: base == "", client: sdk.NewClient(opts...)}, nil
}

// reasoningKeys are the delta fields compatible servers stream reasoning
// in (DeepSeek and vLLM: reasoning_content; Ollama, OpenRouter: reasoning).
var reasoningKeys = []string{"reasoning_content", "reasoning", "reasoning_text"}

// Stream implements loop.Provider. Failures come back as a message with
// stopReason "error" (or "aborted" when ctx ended) keeping what streamed.
func (p *Provider) Stream(ctx context.Context, req *loop.Request, emit func(*loop.StreamEvent)) (*loop.AssistantMessage, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	b := provider.NewBuilder(emit)
	stream := p.client.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()

	cur, curType := -1, ""   // the open text or thinking block
	calls := map[int64]int{} // tool_calls[].index → our block
	var order []int          // tool-call blocks in order, closed at the end
	finish := ""
	var usage *loop.Usage
	closeCur := func() {
		if cur >= 0 {
			b.Close(cur)
			cur, curType = -1, ""
		}
	}
	for stream.Next() {
		chunk := stream.Current()
		b.Start()
		if chunk.JSON.Usage.Valid() && chunk.JSON.Usage.Raw() != "null" {
			usage = convertUsage(chunk.Usage)
			b.SetUsage(usage)
		}
		if len(chunk.Choices) == 0 {
			continue
		}
		ch := chunk.Choices[0]
		d := ch.Delta
		for _, k := range reasoningKeys {
			f, ok := d.JSON.ExtraFields[k]
			if !ok {
				continue
			}
			var s string
			if json.Unmarshal([]byte(f.Raw()), &s) != nil || s == "" {
				continue
			}
			if curType != "thinking" {
				closeCur()
				cur, curType = b.Open(loop.Part{Type: "thinking"}), "thinking"
			}
			b.Delta(cur, s)
			break
		}
		if d.Content != "" {
			if curType != "text" {
				closeCur()
				cur, curType = b.Open(loop.Part{Type: "text"}), "text"
			}
			b.Delta(cur, d.Content)
		}
		for _, tc := range d.ToolCalls {
			i, ok := calls[tc.Index]
			if !ok {
				closeCur()
				i = b.Open(loop.Part{Type: "toolCall", ID: tc.ID, Name: tc.Function.Name})
				calls[tc.Index] = i
				order = append(order, i)
			} else {
				b.SetToolCall(i, tc.ID, tc.Function.Name)
			}
			b.Delta(i, tc.Function.Arguments)
		}
		if ch.FinishReason != "" {
			finish = ch.FinishReason
		}
	}
	closeCur()
	for _, i := range order {
		b.Close(i)
	}
	msg := b.Message()
	msg.Usage = usage
	if msg.Usage == nil {
		msg.Usage = &loop.Usage{}
	}
	switch err := stream.Err(); {
	case ctx.Err() != nil:
		msg.StopReason, msg.ErrorMessage = loop.StopAborted, "Request was aborted"
	case err != nil:
		msg.StopReason, msg.ErrorMessage = loop.StopError, describe(err, p.cfg.APIKey)
	case finish == "":
		msg.StopReason, msg.ErrorMessage = loop.StopError, "openai: the stream ended before the message did (connection cut)"
	default:
		msg.StopReason, msg.ErrorMessage = mapFinish(finish)
		if msg.StopReason == loop.StopStop && len(order) > 0 {
			msg.StopReason = loop.StopToolUse // servers that say "stop" after tool calls
		}
	}
	return msg, nil
}

// convertUsage is pi's reading of the usage chunk: cached prompt tokens
// count as cache reads, not input.
func convertUsage(u sdk.CompletionUsage) *loop.Usage {
	cached := u.PromptTokensDetails.CachedTokens
	written := u.PromptTokensDetails.CacheWriteTokens
	out := &loop.Usage{
		Input:      max(0, u.PromptTokens-cached-written),
		Output:     u.CompletionTokens,
		CacheRead:  cached,
		CacheWrite: written,
	}
	out.TotalTokens = out.Input + out.Output + out.CacheRead + out.CacheWrite
	return out
}

// mapFinish is pi's mapping of finish reasons.
func mapFinish(r string) (loop.StopReason, string) {
	switch r {
	case "stop":
		return loop.StopStop, ""
	case "tool_calls", "function_call":
		return loop.StopToolUse, ""
	case "length":
		return loop.StopLength, ""
	case "content_filter":
		return loop.StopError, "openai: the reply was stopped by the content filter"
	}
	return loop.StopError, fmt.Sprintf("openai: unknown finish reason %q", r)
}

// describe words an SDK error for the transcript: status, the server's
// error type and message (an unknown model, a bad key …), never the key.
func describe(err error, key string) string {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		msg := fmt.Sprintf("openai: %d %s", apiErr.StatusCode, http.StatusText(apiErr.StatusCode))
		if apiErr.Type != "" {
			msg += ": " + apiErr.Type
		}
		switch {
		case apiErr.Message != "":
			msg += ": " + apiErr.Message
		case apiErr.RawJSON() != "":
			msg += ": " + apiErr.RawJSON()
		}
		if apiErr.StatusCode == http.StatusUnauthorized {
			msg += " (check OPENAI_API_KEY)"
		}
		return provider.Redact(errors.New(msg), key).Error()
	}
	return provider.Redact(fmt.Errorf("openai: %w", err), key).Error()
}
