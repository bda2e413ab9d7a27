package openai

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

const testKey = "sk-openai-test-0123456789"

// chunk is a chat.completion.chunk with one choice.
func chunk(delta string, finish string) providertest.Event {
	f := "null"
	if finish != "" {
		f = fmt.Sprintf("%q", finish)
	}
	return providertest.Event{Data: fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`, delta, f)}
}

func text(s string) providertest.Event {
	b, _ := json.Marshal(s)
	return chunk(fmt.Sprintf(`{"content":%s}`, b), "")
}

func callStart(idx int, id, name string) providertest.Event {
	return chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, idx, id, name), "")
}

func callArgs(idx int, s string) providertest.Event {
	b, _ := json.Marshal(s)
	return chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, idx, b), "")
}

func usage(prompt, completion, cached int) providertest.Event {
	return providertest.Event{Data: fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`, prompt, completion, prompt+completion, cached)}
}

var done = providertest.Event{Data: "[DONE]"}

func finalAnswer(s string) providertest.Reply {
	return providertest.SSE(chunk(`{"role":"assistant","content":""}`, ""), text(s), chunk(`{}`, "stop"), usage(80, 6, 0), done)
}

func newProvider(t *testing.T, s *providertest.Server, cfg Config) *Provider {
	t.Helper()
	cfg.BaseURL = s.URL + "/v1"
	if cfg.Model == "" {
		cfg.Model = "gpt-test"
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

func hi() *loop.Request { return &loop.Request{Messages: []loop.Message{loop.UserText("hi")}} }

// A two-turn session: the model reads a file in the sandbox, the result
// goes back, the final answer ends the session.
func TestSessionReadsFile(t *testing.T) {
	s := providertest.NewServer(t,
		providertest.SSE(
			chunk(`{"role":"assistant","content":""}`, ""),
			text("Let me "), text("look."),
			callStart(0, "call_1", "read"),
			callArgs(0, `{"pa`), callArgs(0, `th": "hel`), callArgs(0, `lo.txt"}`),
			chunk(`{}`, "tool_calls"),
			usage(30, 12, 10),
			done),
		finalAnswer("The file says hi."),
	)
	p := newProvider(t, s, Config{System: "be brief", MaxTokens: 500})
	msgs, events := providertest.Session(t, p, map[string]string{"hello.txt": "hi from the sandbox\n"}, "what does hello.txt say?")
	if len(msgs) != 4 {
		b, _ := json.Marshal(msgs)
		t.Fatalf("want prompt, assistant, tool result, assistant; got %s", b)
	}
	first := msgs[1].(*loop.AssistantMessage)
	if first.StopReason != loop.StopToolUse || first.Content[0].Text != "Let me look." ||
		first.Content[1].ID != "call_1" || string(first.Content[1].Arguments) != `{"path": "hello.txt"}` {
		t.Errorf("first reply %+v", first)
	}
	if u := first.Usage; u == nil || *u != (loop.Usage{Input: 20, Output: 12, CacheRead: 10, TotalTokens: 42}) {
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
	if reqs[0].Path != "/v1/chat/completions" || reqs[0].Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("request path %s, auth %q", reqs[0].Path, reqs[0].Header.Get("Authorization"))
	}
	var body1 struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		MaxTokens     int    `json:"max_tokens"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []map[string]any `json:"messages"`
		Tools    []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string         `json:"name"`
				Description string         `json:"description"`
				Parameters  map[string]any `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body1); err != nil {
		t.Fatal(err)
	}
	if body1.Model != "gpt-test" || !body1.Stream || body1.MaxTokens != 500 || !body1.StreamOptions.IncludeUsage ||
		body1.Messages[0]["role"] != "system" || body1.Messages[0]["content"] != "be brief" || body1.Messages[1]["content"] != "what does hello.txt say?" {
		t.Errorf("request %s", reqs[0].Body)
	}
	found := false
	for _, tl := range body1.Tools {
		if tl.Function.Name == "read" {
			found = tl.Type == "function" && strings.Contains(tl.Function.Description, "Read") &&
				tl.Function.Parameters["properties"].(map[string]any)["path"] != nil && fmt.Sprint(tl.Function.Parameters["required"]) == "[path]"
		}
	}
	if !found {
		t.Errorf("read is not declared right: %s", reqs[0].Body)
	}
	var body2 struct {
		Messages []json.RawMessage `json:"messages"`
	}
	json.Unmarshal(reqs[1].Body, &body2)
	if len(body2.Messages) != 4 {
		t.Fatalf("second request: want system, user, assistant, tool; got %s", reqs[1].Body)
	}
	if a := string(body2.Messages[2]); !strings.Contains(a, `"tool_calls":[{"id":"call_1","function":{"arguments":"{\"path\": \"hello.txt\"}","name":"read"},"type":"function"}]`) {
		t.Errorf("assistant message %s", a)
	}
	if m := string(body2.Messages[3]); !strings.Contains(m, `"role":"tool"`) || !strings.Contains(m, `"tool_call_id":"call_1"`) || !strings.Contains(m, "hi from the sandbox") {
		t.Errorf("tool message %s", m)
	}
}

func TestUnauthorized(t *testing.T) {
	s := providertest.NewServer(t, providertest.Status(401,
		`{"error":{"message":"Incorrect API key provided: `+testKey+`","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
	msg, _ := newProvider(t, s, Config{}).Stream(context.Background(), hi(), nil)
	if msg.StopReason != loop.StopError || !strings.Contains(msg.ErrorMessage, "401 Unauthorized: invalid_request_error: Incorrect API key provided") {
		t.Errorf("message %+v", msg)
	}
	if strings.Contains(msg.ErrorMessage, testKey) {
		t.Errorf("the key is in the error: %s", msg.ErrorMessage)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestUnknownModel(t *testing.T) {
	s := providertest.NewServer(t, providertest.Status(404,
		`{"error":{"message":"The model `+"`gpt-nope`"+` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`))
	msg, _ := newProvider(t, s, Config{Model: "gpt-nope"}).Stream(context.Background(), hi(), nil)
	if msg.StopReason != loop.StopError || !strings.Contains(msg.ErrorMessage, "404 Not Found: invalid_request_error: The model `gpt-nope` does not exist") {
		t.Errorf("message %+v", msg)
	}
}

func TestRetries429ThenSucceeds(t *testing.T) {
	s := providertest.NewServer(t,
		providertest.Status(429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, "retry-after-ms", "1"),
		finalAnswer("ok"))
	msg, _ := newProvider(t, s, Config{}).Stream(context.Background(), hi(), nil)
	if msg.StopReason != loop.StopStop || msg.Content[0].Text != "ok" {
		t.Errorf("message %+v", msg)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestServerErrorGivesUpAfterRetries(t *testing.T) {
	busy := providertest.Status(503, `{"error":{"message":"The server is overloaded","type":"server_error"}}`, "retry-after-ms", "1")
	s := providertest.NewServer(t, busy, busy, busy, finalAnswer("too late"))
	msg, _ := newProvider(t, s, Config{}).Stream(context.Background(), hi(), nil)
	if msg.StopReason != loop.StopError || !strings.Contains(msg.ErrorMessage, "503 Service Unavailable: server_error: The server is overloaded") {
		t.Errorf("message %+v", msg)
	}
	if n := len(s.Requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestErrorMidStream(t *testing.T) {
	s := providertest.NewServer(t, providertest.SSE(text("partial"), providertest.Event{Data: `{"error":{"message":"overloaded","type":"server_error"}}`}))
	msg, _ := newProvider(t, s, Config{}).Stream(context.Background(), hi(), nil)
	if msg.StopReason != loop.StopError || !strings.Contains(msg.ErrorMessage, "overloaded") || msg.Content[0].Text != "partial" {
		t.Errorf("message %+v", msg)
	}
}

func TestStreamCut(t *testing.T) {
	s := providertest.NewServer(t, providertest.Cut(text("half a sen"), callStart(0, "c", "read"), callArgs(0, `{"path":"a`)))
	msg, _ := newProvider(t, s, Config{}).Stream(context.Background(), hi(), nil)
	if msg.StopReason != loop.StopError || !strings.Contains(msg.ErrorMessage, "openai:") || msg.Content[0].Text != "half a sen" {
		t.Errorf("message %+v", msg)
	}
}

func TestAbortMidStream(t *testing.T) {
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		providertest.WriteEvents(w, text("thinking about it"))
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msg, _ := newProvider(t, s, Config{}).Stream(ctx, hi(), func(e *loop.StreamEvent) {
		if e.Type == "text_delta" {
			cancel()
		}
	})
	if msg.StopReason != loop.StopAborted || msg.ErrorMessage != "Request was aborted" {
		t.Errorf("message %+v", msg)
	}
}

func TestFinishReasons(t *testing.T) {
	for api, want := range map[string]loop.StopReason{
		"stop": loop.StopStop, "tool_calls": loop.StopToolUse, "length": loop.StopLength, "content_filter": loop.StopError,
	} {
		s := providertest.NewServer(t, providertest.SSE(text("x"), chunk(`{}`, api), done))
		msg, _ := newProvider(t, s, Config{}).Stream(context.Background(), hi(), nil)
		if msg.StopReason != want {
			t.Errorf("%s → %s, want %s", api, msg.StopReason, want)
		}
	}
}

// Compatible servers stream reasoning in reasoning_content, and some say
// "stop" after tool calls; parallel calls arrive by index.
func TestCompatibleServerStream(t *testing.T) {
	s := providertest.NewServer(t, providertest.SSE(
		chunk(`{"role":"assistant","reasoning_content":"Two files"}`, ""),
		chunk(`{"reasoning_content":", two reads."}`, ""),
		callStart(0, "a", "read"), callArgs(0, `{"path":`),
		callStart(1, "b", "read"), callArgs(1, `{"path":"b"}`),
		callArgs(0, `"a"}`),
		chunk(`{}`, "stop"), done))
	var types []string
	msg, _ := newProvider(t, s, Config{Thinking: "high"}).Stream(context.Background(), hi(), func(e *loop.StreamEvent) { types = append(types, e.Type) })
	if msg.StopReason != loop.StopToolUse || len(msg.Content) != 3 || msg.Content[0].Thinking != "Two files, two reads." ||
		string(msg.Content[1].Arguments) != `{"path":"a"}` || string(msg.Content[2].Arguments) != `{"path":"b"}` {
		t.Errorf("message %+v", msg)
	}
	if got := strings.Join(types, " "); !strings.HasPrefix(got, "start thinking_start thinking_delta thinking_delta thinking_end toolcall_start") {
		t.Errorf("events %s", got)
	}
	if body := string(s.Requests()[0].Body); !strings.Contains(body, `"reasoning_effort":"high"`) {
		t.Errorf("request %s", body)
	}
}

func TestRequestMapping(t *testing.T) {
	s := providertest.NewServer(t, finalAnswer("ok"))
	transcript := []loop.Message{
		loop.UserText("look"),
		&loop.AssistantMessage{Content: []loop.Part{{Type: "thinking", Thinking: "hidden"}, {Type: "toolCall", ID: "t1", Name: "read", Arguments: json.RawMessage(`{"path":"a.png"}`)}}, StopReason: loop.StopToolUse},
		&loop.ToolResultMessage{ToolCallID: "t1", ToolName: "read", Result: &loop.Result{Content: []loop.Content{loop.Text("Read image file [image/png]"), loop.Image("aGk=", "image/png")}}},
		&loop.AssistantMessage{Content: []loop.Part{{Type: "text", Text: "dropped"}}, StopReason: loop.StopAborted},
		loop.UserText("again"),
	}
	newProvider(t, s, Config{}).Stream(context.Background(), &loop.Request{Messages: transcript}, nil)
	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	raw := s.Requests()[0].Body
	json.Unmarshal(raw, &body)
	if len(body.Messages) != 5 {
		t.Fatalf("want user, assistant, tool, user (image), user; got %s", raw)
	}
	if a := string(body.Messages[1]); strings.Contains(a, "hidden") || strings.Contains(a, `"content"`) {
		t.Errorf("assistant message %s", a)
	}
	if m := string(body.Messages[2]); m != `{"content":"Read image file [image/png]","tool_call_id":"t1","role":"tool"}` {
		t.Errorf("tool message %s", m)
	}
	want := `{"content":[{"text":"Attached image(s) from tool result:","type":"text"},{"image_url":{"url":"data:image/png;base64,aGk="},"type":"image_url"}],"role":"user"}`
	if m := string(body.Messages[3]); m != want {
		t.Errorf("image message\n got %s\nwant %s", m, want)
	}
	if strings.Contains(string(raw), "dropped") {
		t.Error("an aborted assistant message was sent")
	}
}

func TestNewNeedsKeyOrBaseURL(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	if _, err := New(Config{Model: "m"}); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("New without key: %v", err)
	}
	if _, err := New(Config{Model: "m", BaseURL: "http://127.0.0.1:1/v1"}); err != nil {
		t.Errorf("New with a base URL and no key: %v", err)
	}
}

func TestNoKeyNoAuthorization(t *testing.T) {
	s := providertest.NewServer(t, finalAnswer("ok"))
	t.Setenv("OPENAI_API_KEY", "sk-from-env-must-not-be-sent") // the SDK reads it in NewClient
	p, err := New(Config{Model: "local", BaseURL: s.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	p.Stream(context.Background(), hi(), nil)
	if h := s.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization %q sent without a key", h)
	}
}
