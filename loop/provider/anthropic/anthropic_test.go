package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/loop/provider/providertest"
)

const testKey = "sk-ant-test-0123456789"

// ev is one server-sent event (a local type keeps the literals short).
type ev struct{ name, data string }

func toSSE(evs []ev) []providertest.Event {
	out := make([]providertest.Event, len(evs))
	for i, e := range evs {
		out[i] = providertest.Event{Name: e.name, Data: e.data}
	}
	return out
}

func messageStart(input int) ev {
	return ev{"message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":1,"cache_read_input_tokens":7,"cache_creation_input_tokens":3}}}`, input)}
}

func blockStart(i int, block string) ev {
	return ev{"content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, block)}
}

func delta(i int, d string) ev {
	return ev{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, i, d)}
}

func textDelta(i int, s string) ev {
	b, _ := json.Marshal(s)
	return delta(i, fmt.Sprintf(`{"type":"text_delta","text":%s}`, b))
}

func jsonDelta(i int, s string) ev {
	b, _ := json.Marshal(s)
	return delta(i, fmt.Sprintf(`{"type":"input_json_delta","partial_json":%s}`, b))
}

func blockStop(i int) ev {
	return ev{"content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i)}
}

func messageEnd(stop string, output int) []ev {
	return []ev{
		{"message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stop, output)},
		{"message_stop", `{"type":"message_stop"}`},
	}
}

func stream(evs ...any) providertest.Reply {
	var all []ev
	for _, e := range evs {
		switch e := e.(type) {
		case ev:
			all = append(all, e)
		case []ev:
			all = append(all, e...)
		}
	}
	return providertest.SSE(toSSE(all)...)
}

func finalAnswer(text string) providertest.Reply {
	return stream(messageStart(60), blockStart(0, `{"type":"text","text":""}`), textDelta(0, text), blockStop(0), messageEnd("end_turn", 9))
}

func newProvider(t *testing.T, s *providertest.Server, cfg Config) *Provider {
	t.Helper()
	cfg.BaseURL = s.URL
	if cfg.Model == "" {
		cfg.Model = "claude-test"
	}
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A two-turn session: the model reads a file in the sandbox, the result
// goes back, the final answer ends the session.
func TestSessionReadsFile(t *testing.T) {
	s := providertest.NewServer(t,
		stream(messageStart(25),
			blockStart(0, `{"type":"text","text":""}`),
			ev{"ping", `{"type":"ping"}`},
			textDelta(0, "Let me "), textDelta(0, "look."), blockStop(0),
			blockStart(1, `{"type":"tool_use","id":"toolu_1","name":"read","input":{}}`),
			jsonDelta(1, ""), jsonDelta(1, `{"pa`), jsonDelta(1, `th": "hel`), jsonDelta(1, `lo.txt"}`), blockStop(1),
			messageEnd("tool_use", 40)),
		finalAnswer("The file says hi."),
	)
	p := newProvider(t, s, Config{System: "be brief"})
	msgs, events := providertest.Session(t, p, map[string]string{"hello.txt": "hi from the sandbox\n"}, "what does hello.txt say?")

	if len(msgs) != 4 {
		b, _ := json.Marshal(msgs)
		t.Fatalf("%d messages, want prompt, assistant, tool result, assistant, got %s", len(msgs), b)
	}
	first := msgs[1].(*loop.AssistantMessage)
	if first.StopReason != loop.StopToolUse || first.Content[0].Text != "Let me look." ||
		first.Content[1].ID != "toolu_1" || string(first.Content[1].Arguments) != `{"path": "hello.txt"}` {
		t.Errorf("first reply %+v", first)
	}
	if u := first.Usage; u == nil || *u != (loop.Usage{Input: 25, Output: 40, CacheRead: 7, CacheWrite: 3, TotalTokens: 75}) {
		t.Errorf("usage %+v", first.Usage)
	}
	tr := msgs[2].(*loop.ToolResultMessage)
	if tr.IsError() || !strings.Contains(tr.Result.Content[0].Text, "hi from the sandbox") {
		t.Errorf("tool result %+v", tr.Result)
	}
	last := msgs[3].(*loop.AssistantMessage)
	if last.StopReason != loop.StopStop || last.Content[0].Text != "The file says hi." {
		t.Errorf("final reply %+v", last)
	}
	got := strings.Join(providertest.UpdateTypes(events), " ")
	want := "text_start text_delta text_delta text_end toolcall_start toolcall_delta toolcall_delta toolcall_delta toolcall_end"
	if !strings.HasPrefix(got, want) {
		t.Errorf("updates %s, want first %s", got, want)
	}

	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	// This SDK sends the key as a bearer token; older ones as x-api-key.
	h := reqs[0].Header
	if reqs[0].Path != "/v1/messages" || (h.Get("Authorization") != "Bearer "+testKey && h.Get("X-Api-Key") != testKey) {
		t.Errorf("request path %s, headers %v", reqs[0].Path, reqs[0].Header)
	}
	var body1 struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		Stream    bool   `json:"stream"`
		System    []struct {
			Text string `json:"text"`
		} `json:"system"`
		Tools []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body1); err != nil {
		t.Fatal(err)
	}
	if body1.Model != "claude-test" || body1.MaxTokens != DefaultMaxTokens || !body1.Stream || len(body1.System) != 1 || body1.System[0].Text != "be brief" {
		t.Errorf("request %s", reqs[0].Body)
	}
	var read map[string]any
	for _, tl := range body1.Tools {
		if tl.Name == "read" {
			read = tl.InputSchema
			if !strings.Contains(tl.Description, "Read") {
				t.Errorf("read's description %q", tl.Description)
			}
		}
	}
	if read == nil || read["type"] != "object" || read["properties"].(map[string]any)["path"] == nil || fmt.Sprint(read["required"]) != "[path]" {
		t.Errorf("read's input_schema %v", read)
	}
	var body2 struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[1].Body, &body2); err != nil {
		t.Fatal(err)
	}
	if len(body2.Messages) != 3 || body2.Messages[1].Role != "assistant" || body2.Messages[2].Role != "user" {
		t.Fatalf("second request messages %s", reqs[1].Body)
	}
	res := string(body2.Messages[2].Content[0])
	if !strings.Contains(res, `"type":"tool_result"`) || !strings.Contains(res, `"tool_use_id":"toolu_1"`) || !strings.Contains(res, "hi from the sandbox") {
		t.Errorf("tool result block %s", res)
	}
	call := string(body2.Messages[1].Content[1])
	if !strings.Contains(call, `"type":"tool_use"`) || !strings.Contains(call, `"input":{"path":"hello.txt"}`) {
		t.Errorf("tool use block %s", call)
	}
}

func TestUnauthorized(t *testing.T) {
	s := providertest.NewServer(t, providertest.Status(401,
		`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key `+testKey+`"}}`))
	msg, _ := newProvider(t, s, Config{}).Stream(context.Background(), &loop.Request{Messages: []loop.Message{loop.UserText("hi")}}, nil)
	if msg.StopReason != loop.StopError || !strings.Contains(msg.ErrorMessage, "401 Unauthorized: authentication_error: invalid x-api-key") {
		t.Errorf("message %+v", msg)
	}
	if strings.Contains(msg.ErrorMessage, testKey) {
		t.Errorf("the key is in the error: %s", msg.ErrorMessage)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests, want 1 (no retry on 401)", n)
	}
}

func TestUnknownModel(t *testing.T) {
	s := providertest.NewServer(t, providertest.Status(404,
		`{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}`))
	msg, _ := newProvider(t, s, Config{Model: "claude-nope"}).Stream(context.Background(), &loop.Request{Messages: []loop.Message{loop.UserText("hi")}}, nil)
	if msg.StopReason != loop.StopError || !strings.Contains(msg.ErrorMessage, "404 Not Found: not_found_error: model: claude-nope") {
		t.Errorf("message %+v", msg)
	}
}

func TestRetries429ThenSucceeds(t *testing.T) {
	s := providertest.NewServer(t,
		providertest.Status(429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, "retry-after-ms", "1"),
		finalAnswer("ok"))
	msg, _ := newProvider(t, s, Config{}).Stream(context.Background(), &loop.Request{Messages: []loop.Message{loop.UserText("hi")}}, nil)
	if msg.StopReason != loop.StopStop || msg.Content[0].Text != "ok" {
		t.Errorf("message %+v", msg)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestOverloadedGivesUpAfterRetries(t *testing.T) {
	overloaded := providertest.Status(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "retry-after-ms", "1")
	s := providertest.NewServer(t, overloaded, overloaded, overloaded, finalAnswer("too late"))
	msg, _ := newProvider(t, s, Config{}).Stream(context.Background(), &loop.Request{Messages: []loop.Message{loop.UserText("hi")}}, nil)
	if msg.StopReason != loop.StopError || !strings.Contains(msg.ErrorMessage, "overloaded_error: Overloaded") {
		t.Errorf("message %+v", msg)
	}
	if n := len(s.Requests()); n != 3 {
		t.Errorf("%d requests, want 3 (the first and two retries)", n)
	}
}

func TestOverloadedMidStream(t *testing.T) {
	s := providertest.NewServer(t, stream(messageStart(5), blockStart(0, `{"type":"text","text":""}`), textDelta(0, "partial"),
		ev{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}))
	msg, _ := newProvider(t, s, Config{}).Stream(context.Background(), &loop.Request{Messages: []loop.Message{loop.UserText("hi")}}, nil)
	if msg.StopReason != loop.StopError || !strings.Contains(msg.ErrorMessage, "overloaded_error: Overloaded") || msg.Content[0].Text != "partial" {
		t.Errorf("message %+v", msg)
	}
}

func TestStreamCut(t *testing.T) {
	s := providertest.NewServer(t, providertest.Cut(toSSE([]ev{messageStart(5), blockStart(0, `{"type":"text","text":""}`), textDelta(0, "half a sen")})...))
	msg, _ := newProvider(t, s, Config{}).Stream(context.Background(), &loop.Request{Messages: []loop.Message{loop.UserText("hi")}}, nil)
	if msg.StopReason != loop.StopError || msg.ErrorMessage == "" || len(msg.Content) != 1 || msg.Content[0].Text != "half a sen" {
		t.Errorf("message %+v", msg)
	}
}

func TestAbortMidStream(t *testing.T) {
	release := make(chan struct{})
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		providertest.WriteEvents(w, toSSE([]ev{messageStart(5), blockStart(0, `{"type":"text","text":""}`), textDelta(0, "thinking about it")})...)
		select { // until the client goes away
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msg, _ := newProvider(t, s, Config{}).Stream(ctx, &loop.Request{Messages: []loop.Message{loop.UserText("hi")}}, func(e *loop.StreamEvent) {
		if e.Type == "text_delta" {
			cancel() // Ctrl-C while the reply streams
		}
	})
	if msg.StopReason != loop.StopAborted || msg.ErrorMessage != "Request was aborted" {
		t.Errorf("message %+v", msg)
	}
}

func TestStopReasons(t *testing.T) {
	for api, want := range map[string]loop.StopReason{
		"end_turn": loop.StopStop, "stop_sequence": loop.StopStop, "pause_turn": loop.StopStop,
		"tool_use": loop.StopToolUse, "max_tokens": loop.StopLength, "refusal": loop.StopError,
	} {
		s := providertest.NewServer(t, stream(messageStart(1), messageEnd(api, 1)))
		msg, _ := newProvider(t, s, Config{}).Stream(context.Background(), &loop.Request{Messages: []loop.Message{loop.UserText("hi")}}, nil)
		if msg.StopReason != want {
			t.Errorf("%s → %s, want %s", api, msg.StopReason, want)
		}
	}
}

func TestThinkingStreamsAndGoesBack(t *testing.T) {
	s := providertest.NewServer(t,
		stream(messageStart(5),
			blockStart(0, `{"type":"thinking","thinking":"","signature":""}`),
			delta(0, `{"type":"thinking_delta","thinking":"Hmm, "}`), delta(0, `{"type":"thinking_delta","thinking":"a file."}`),
			delta(0, `{"type":"signature_delta","signature":"sig-abc"}`), blockStop(0),
			blockStart(1, `{"type":"redacted_thinking","data":"opaque"}`), blockStop(1),
			blockStart(2, `{"type":"text","text":"Done"}`), blockStop(2),
			messageEnd("end_turn", 3)),
		finalAnswer("again"))
	p := newProvider(t, s, Config{Thinking: "medium", MaxTokens: 1000})
	var types []string
	msg, _ := p.Stream(context.Background(), &loop.Request{Messages: []loop.Message{loop.UserText("hi")}}, func(e *loop.StreamEvent) { types = append(types, e.Type) })
	th := msg.Content[0]
	if th.Type != "thinking" || th.Thinking != "Hmm, a file." || th.Signature != "sig-abc" || !msg.Content[1].Redacted || msg.Content[2].Text != "Done" {
		t.Errorf("message %+v", msg.Content)
	}
	if got := strings.Join(types, " "); !strings.HasPrefix(got, "start thinking_start thinking_delta thinking_delta thinking_end") {
		t.Errorf("events %s", got)
	}
	// The next request sends the signed and the redacted block back.
	p.Stream(context.Background(), &loop.Request{Messages: []loop.Message{loop.UserText("hi"), msg, loop.UserText("more")}}, nil)
	body := string(s.Requests()[1].Body)
	for _, want := range []string{`"thinking":{"budget_tokens":8192,"type":"enabled"}`, `"max_tokens":9192`,
		`{"signature":"sig-abc","thinking":"Hmm, a file.","type":"thinking"}`, `{"data":"opaque","type":"redacted_thinking"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("request lacks %s:\n%s", want, body)
		}
	}
}

func TestRequestMapping(t *testing.T) {
	s := providertest.NewServer(t, finalAnswer("ok"))
	call := func(id string) loop.Part {
		return loop.Part{Type: "toolCall", ID: id, Name: "read", Arguments: json.RawMessage(`{"path":"a.png"}`)}
	}
	transcript := []loop.Message{
		loop.UserText("look"),
		&loop.AssistantMessage{Content: []loop.Part{{Type: "thinking", Thinking: "unsigned"}, call("t1"), call("t2")}, StopReason: loop.StopToolUse},
		&loop.ToolResultMessage{ToolCallID: "t1", ToolName: "read", Result: &loop.Result{Content: []loop.Content{loop.Image("aGk=", "image/png")}}},
		&loop.ToolResultMessage{ToolCallID: "t2", ToolName: "read", Result: loop.ErrorText("ENOENT")},
		&loop.AssistantMessage{Content: []loop.Part{{Type: "text", Text: "dropped"}}, StopReason: loop.StopError, ErrorMessage: "boom"},
		loop.UserText("again"),
	}
	newProvider(t, s, Config{}).Stream(context.Background(), &loop.Request{Messages: transcript}, nil)
	var body struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	raw := s.Requests()[0].Body
	json.Unmarshal(raw, &body)
	if len(body.Messages) != 4 {
		t.Fatalf("want user, assistant, user (both results), user; got %s", raw)
	}
	if got := string(body.Messages[1].Content[0]); got != `{"text":"unsigned","type":"text"}` {
		t.Errorf("unsigned thinking sent as %s", got)
	}
	results := body.Messages[2].Content
	if len(results) != 2 {
		t.Fatalf("tool results %s", raw)
	}
	want1 := `{"tool_use_id":"t1","content":[{"text":"(see attached image)","type":"text"},{"source":{"data":"aGk=","media_type":"image/png","type":"base64"},"type":"image"}],"type":"tool_result"}`
	if got := string(results[0]); got != want1 {
		t.Errorf("image result\n got %s\nwant %s", got, want1)
	}
	if got := string(results[1]); !strings.Contains(got, `"is_error":true`) || !strings.Contains(got, "ENOENT") {
		t.Errorf("error result %s", got)
	}
	if strings.Contains(string(raw), "dropped") {
		t.Error("an errored assistant message was sent")
	}
	if got := string(body.Messages[3].Content[0]); !strings.Contains(got, `"cache_control":{"type":"ephemeral"}`) {
		t.Errorf("last user block has no cache breakpoint: %s", got)
	}
}

func TestNewRejects(t *testing.T) {
	for _, cfg := range []Config{{APIKey: "k"}, {Model: "m"}, {Model: "m", APIKey: "k", Thinking: "max"}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}
