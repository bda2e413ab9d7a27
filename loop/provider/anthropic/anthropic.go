package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/loop/provider"
)

// DefaultMaxTokens is max_tokens when Config.MaxTokens is zero (the API
// requires one).
const DefaultMaxTokens = 8192

// Thinking budgets per level (pi's defaults), added to max_tokens.
var thinkingBudget = map[string]int64{"low": 2048, "medium": 8192, "high": 16384}

// Config configures a Provider.
type Config struct {
	// Model is passed through as given ("claude-sonnet-4-5", ...).
	Model string
	// APIKey is the API key (the SDK sends it as a bearer token). Empty: an
	// error from New.
	APIKey string
	// BaseURL overrides the endpoint. Empty: ANTHROPIC_BASE_URL if set
	// (as the SDK does), else https://api.anthropic.com.
	BaseURL string
	// System is the system prompt (empty: none).
	System string
	// MaxTokens is max_tokens (zero: DefaultMaxTokens).
	MaxTokens int64
	// Thinking is "", "low", "medium" or "high": extended thinking with a
	// budget of 2048, 8192 or 16384 tokens.
	Thinking string
	// MaxRetries overrides the SDK's retry count (nil: its default, 2).
	MaxRetries *int
	// HTTPClient replaces the SDK's HTTP client (tests).
	HTTPClient *http.Client
}

// Provider streams replies from the Messages API. It is safe for
// concurrent use.
type Provider struct {
	cfg    Config
	client sdk.Client
}

// New makes a Provider.
func New(cfg Config) (*Provider, error) {
	if cfg.Model == "" {
		return nil, errors.New("anthropic: no model given")
	}
	if cfg.APIKey == "" {
		return nil, errors.New("anthropic: no API key (set ANTHROPIC_API_KEY)")
	}
	if _, ok := thinkingBudget[cfg.Thinking]; cfg.Thinking != "" && !ok {
		return nil, fmt.Errorf("anthropic: thinking level %q (want low, medium or high)", cfg.Thinking)
	}
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
	return &Provider{cfg: cfg, client: sdk.NewClient(opts...)}, nil
}

// Stream implements loop.Provider. Failures come back as a message with
// stopReason "error" (or "aborted" when ctx ended) keeping what streamed.
func (p *Provider) Stream(ctx context.Context, req *loop.Request, emit func(*loop.StreamEvent)) (*loop.AssistantMessage, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	b := provider.NewBuilder(emit)
	stream := p.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()

	var usage loop.Usage
	blocks := map[int64]int{} // the API's block index → ours
	stop := sdk.StopReason("")
	done := false
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			u := ev.Message.Usage
			usage = loop.Usage{Input: u.InputTokens, Output: u.OutputTokens,
				CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens}
			b.SetUsage(total(usage))
			b.Start()
		case "content_block_start":
			cb := ev.ContentBlock
			switch cb.Type {
			case "text":
				blocks[ev.Index] = b.Open(loop.Part{Type: "text"})
				b.Delta(blocks[ev.Index], cb.Text)
			case "thinking":
				blocks[ev.Index] = b.Open(loop.Part{Type: "thinking", Signature: cb.Signature})
				b.Delta(blocks[ev.Index], cb.Thinking)
			case "redacted_thinking":
				blocks[ev.Index] = b.Open(loop.Part{Type: "thinking", Thinking: "[Reasoning redacted]", Signature: cb.Data, Redacted: true})
			case "tool_use":
				blocks[ev.Index] = b.Open(loop.Part{Type: "toolCall", ID: cb.ID, Name: cb.Name})
			}
		case "content_block_delta":
			i, ok := blocks[ev.Index]
			if !ok {
				continue
			}
			switch d := ev.Delta; d.Type {
			case "text_delta":
				b.Delta(i, d.Text)
			case "thinking_delta":
				b.Delta(i, d.Thinking)
			case "input_json_delta":
				b.Delta(i, d.PartialJSON)
			case "signature_delta":
				b.Signature(i, d.Signature)
			}
		case "content_block_stop":
			if i, ok := blocks[ev.Index]; ok {
				b.Close(i)
				delete(blocks, ev.Index)
			}
		case "message_delta":
			stop = ev.Delta.StopReason
			u := ev.Usage
			// Cumulative counts; input and cache ones only when sent.
			if u.JSON.InputTokens.Valid() && u.InputTokens > 0 {
				usage.Input = u.InputTokens
			}
			if u.JSON.CacheReadInputTokens.Valid() && u.CacheReadInputTokens > 0 {
				usage.CacheRead = u.CacheReadInputTokens
			}
			if u.JSON.CacheCreationInputTokens.Valid() && u.CacheCreationInputTokens > 0 {
				usage.CacheWrite = u.CacheCreationInputTokens
			}
			usage.Output = u.OutputTokens
			b.SetUsage(total(usage))
		case "message_stop":
			done = true
		}
	}
	msg := b.Message()
	msg.Usage = total(usage)
	switch err := stream.Err(); {
	case ctx.Err() != nil:
		msg.StopReason, msg.ErrorMessage = loop.StopAborted, "Request was aborted"
	case err != nil:
		msg.StopReason, msg.ErrorMessage = loop.StopError, describe(err, p.cfg.APIKey)
	case !done:
		msg.StopReason, msg.ErrorMessage = loop.StopError, "anthropic: the stream ended before the message did (connection cut)"
	default:
		msg.StopReason, msg.ErrorMessage = mapStop(stop)
	}
	return msg, nil
}

func total(u loop.Usage) *loop.Usage {
	u.TotalTokens = u.Input + u.Output + u.CacheRead + u.CacheWrite
	return &u
}

// mapStop is pi's mapping of the API's stop reasons.
func mapStop(r sdk.StopReason) (loop.StopReason, string) {
	switch r {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence, sdk.StopReasonPauseTurn:
		return loop.StopStop, ""
	case sdk.StopReasonToolUse:
		return loop.StopToolUse, ""
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return loop.StopLength, ""
	case sdk.StopReasonRefusal:
		return loop.StopError, "anthropic: the model refused to answer (stop reason refusal)"
	}
	return loop.StopError, fmt.Sprintf("anthropic: unknown stop reason %q", r)
}

// describe words an SDK error for the transcript: status, the server's
// error type and message (an unknown model, a bad key …), never the key.
func describe(err error, key string) string {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		msg := "anthropic: "
		if apiErr.StatusCode != 0 && apiErr.StatusCode != http.StatusOK {
			msg += fmt.Sprintf("%d %s: ", apiErr.StatusCode, http.StatusText(apiErr.StatusCode))
		}
		if t := apiErr.Type(); t != "" {
			msg += string(t) + ": "
		}
		if apiErr.Message != "" {
			msg += apiErr.Message
		} else {
			msg += apiErr.RawJSON()
		}
		if apiErr.StatusCode == http.StatusUnauthorized {
			msg += " (check ANTHROPIC_API_KEY)"
		}
		return provider.Redact(errors.New(msg), key).Error()
	}
	return provider.Redact(fmt.Errorf("anthropic: %w", err), key).Error()
}
