// Package anthropic is a [loop.Provider] for Anthropic's Messages API,
// streaming, through the official SDK (github.com/anthropics/anthropic-sdk-go/v2).
//
// Requests carry the transcript in the API's shape (consecutive tool results
// merged into one user message of tool_result blocks, text and images; signed
// thinking blocks sent back), the tools' names, descriptions and JSON
// Schemas, the system prompt, max_tokens and, for a thinking level, a
// thinking budget. Streamed events become pi's assistant-message events:
// text_delta, thinking_delta and input_json_delta are the text, thinking
// and toolcall deltas. Stop reasons map to pi's: end_turn, stop_sequence
// and pause_turn → stop, tool_use → toolUse, max_tokens → length, refusal
// → error. Usage (input, output, cache read and write) is on every message.
//
// The SDK retries 408, 409, 429 and 5xx (529 overloaded included) with
// backoff. Errors name the status and the server's message; the API key
// never appears in them.
package anthropic
