// Package openai is a [loop.Provider] for OpenAI's Chat Completions API,
// streaming, through the official SDK (github.com/openai/openai-go/v3). It
// is also the provider for OpenAI-compatible servers (vLLM, Ollama,
// llama.cpp, LiteLLM …) given a base URL.
//
// Requests carry the transcript in the API's shape (tool results as "tool"
// messages; their images, which tool messages cannot hold, in a user
// message right after), the tools as functions with their descriptions and
// JSON Schemas, the system prompt, a token limit (max_completion_tokens on
// OpenAI, max_tokens on other servers) and, for a thinking level,
// reasoning_effort. Streamed chunks become pi's assistant-message events:
// delta.content the text deltas, reasoning_content / reasoning the
// thinking deltas, tool_calls[].function.arguments the toolcall deltas.
// Finish reasons map to pi's: stop → stop, tool_calls → toolUse, length →
// length, content_filter → error. Usage (with cached prompt tokens) comes
// from the final chunk (stream_options.include_usage).
//
// The SDK retries 408, 409, 429 and 5xx with backoff. Errors name the
// status and the server's message; the API key never appears in them.
package openai
