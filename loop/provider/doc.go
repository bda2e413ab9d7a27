// Package provider holds what the model providers share and package loop
// does not need: a builder that turns a provider's streamed blocks into
// pi's assistant-message events ([Builder]), partial JSON for tool-call
// arguments still streaming ([PartialJSON]), and keeping API keys out of
// error texts ([Redact]).
//
// The providers themselves live in the subpackages anthropic (the Messages
// API) and openai (Chat Completions, also for OpenAI-compatible servers);
// they alone import the vendors' SDKs, so package loop and package sandbox
// stay free of them.
package provider
