package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/loop/provider/anthropic"
	"github.com/pi-sandbox/pi-sandbox/loop/provider/openai"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// modelFlags are run's flags for a real model.
type modelFlags struct {
	model, baseURL, system, thinking string
	maxTokens                        int64
}

func (m *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.model, "model", "", "run a real model `PROVIDER/MODEL`: anthropic/MODEL (ANTHROPIC_API_KEY) or openai/MODEL (OPENAI_API_KEY, or any OpenAI-compatible server with --base-url)")
	fs.StringVar(&m.baseURL, "base-url", "", "the model API's endpoint `URL` (default: ANTHROPIC_BASE_URL / OPENAI_BASE_URL, else the vendor's)")
	fs.StringVar(&m.system, "system", "", "the system prompt: a `FILE` to read, or the text itself (default: a short coding-agent prompt)")
	fs.Int64Var(&m.maxTokens, "max-tokens", 0, "limit each reply to `N` tokens (default: anthropic 8192, openai the server's)")
	fs.StringVar(&m.thinking, "thinking", "", "thinking `LEVEL` for models that support it: low, medium or high")
}

// others reports whether a model-only flag was given.
func (m *modelFlags) others() bool {
	return m.baseURL != "" || m.system != "" || m.maxTokens != 0 || m.thinking != ""
}

// defaultSystem is the system prompt when --system is not given.
const defaultSystem = `You are a coding agent working in a sandbox. You act through the tools: read, write, edit, bash, grep, find and ls. Relative paths are relative to the working directory.
Look before you change anything: read the relevant files and run the tests. Make the smallest change that does the job, check it (run the tests again), then end with a short summary of what you did.`

// credential is an API key the run holds: its variable and its value.
type credential struct{ env, value string }

// newModelProvider makes the provider --model names. The key comes from
// the provider's variable; it is returned so the caller can keep it away
// from the tools.
func newModelProvider(m modelFlags) (loop.Provider, *credential, error) {
	vendor, model, ok := strings.Cut(m.model, "/")
	if !ok || model == "" {
		return nil, nil, fmt.Errorf("--model %q: want PROVIDER/MODEL, e.g. anthropic/claude-sonnet-4-5 or openai/gpt-5", m.model)
	}
	system := defaultSystem
	if m.system != "" {
		system = m.system
		if st, err := os.Stat(m.system); err == nil && st.Mode().IsRegular() {
			b, err := os.ReadFile(m.system)
			if err != nil {
				return nil, nil, fmt.Errorf("--system: %w", err)
			}
			system = string(b)
		}
	}
	switch vendor {
	case "anthropic":
		cred := &credential{"ANTHROPIC_API_KEY", os.Getenv("ANTHROPIC_API_KEY")}
		p, err := anthropic.New(anthropic.Config{Model: model, APIKey: cred.value, BaseURL: m.baseURL,
			System: system, MaxTokens: m.maxTokens, Thinking: m.thinking})
		return p, cred, err
	case "openai":
		cred := &credential{"OPENAI_API_KEY", os.Getenv("OPENAI_API_KEY")}
		p, err := openai.New(openai.Config{Model: model, APIKey: cred.value, BaseURL: m.baseURL,
			System: system, MaxTokens: m.maxTokens, Thinking: m.thinking})
		return p, cred, err
	}
	return nil, nil, fmt.Errorf("--model %q: unknown provider %q (want anthropic or openai)", m.model, vendor)
}

// guard keeps the key away from the tools: its value is redacted from every
// result and the audit log, and the variable is removed from this process's
// environment (so local commands do not inherit it) unless --env passes it
// explicitly.
func (c *credential) guard(cfg *sandbox.Config) {
	if c == nil || c.value == "" {
		return
	}
	cfg.Policy.Redact.Patterns = append(cfg.Policy.Redact.Patterns, regexp.QuoteMeta(c.value))
	if !slices.Contains(cfg.Policy.Env.Allow, c.env) {
		os.Unsetenv(c.env)
	}
}

// saver writes a session's assistant turns as a script (one JSON line per
// message, as it ends), so `run FILE` replays the session.
type saver struct {
	f   *os.File
	err error
}

func newSaver(name string) (*saver, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	return &saver{f: f}, nil
}

func (s *saver) wrap(emit loop.EmitFunc) loop.EmitFunc {
	return func(ev loop.Event) {
		if e, ok := ev.(loop.MessageEnd); ok && s.err == nil {
			if m, ok := e.Message.(*loop.AssistantMessage); ok {
				b, err := loop.MarshalNoEscape(m)
				if err == nil {
					_, err = s.f.Write(append(b, '\n'))
				}
				s.err = err
			}
		}
		emit(ev)
	}
}

func (s *saver) close() error {
	return errors.Join(s.err, s.f.Close())
}
