// Package mockapi is a small stand-in for the Anthropic Messages API and
// the OpenAI Responses API, served on 127.0.0.1, so the real agent CLIs
// (Claude Code, Codex) can be driven end to end without a key or the
// internet. Each API answers from a script of replies: the n-th model
// call gets the n-th reply, and the last reply repeats.
package mockapi

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Reply is one scripted answer to a model call.
type Reply struct {
	// Status, when not 0 or 200, answers with that HTTP status and an
	// error body of the API's own shape carrying Message.
	Status  int
	Message string
	// ErrorBody, when set, is the error reply's body as it is, instead
	// of the API's usual shape around Message (Codex's usage-limit error
	// carries its reset time in fields of its own).
	ErrorBody string
	// Text is the model's answer when Status is 0 or 200.
	Text string
	// Tools, when set, makes the model call these tools one by one: a
	// request that carries k tool results gets Tools[k], and once all
	// have their results the model answers with Text.
	Tools []Call
	// Drop starts a streamed answer and closes the connection before it
	// completes: a dropped stream, which the CLIs retry by themselves.
	Drop bool
	// When, if set on any reply of a script, picks replies by content
	// instead of by count: a request gets the last reply (in script
	// order) whose When occurs in it, such as a marker in each turn's
	// prompt; a resumed conversation repeats earlier turns, so the
	// latest turn's reply wins. Tools then count only that reply's own
	// calls.
	When string
	// Headers are set on the reply, error or not: the rate-limit headers
	// a CLI reads its limits and their reset times from.
	Headers map[string]string
	// InputTokens and OutputTokens, when not 0, are the usage the reply
	// reports (the default is 12 in, 7 out): Claude Code prices a run
	// from them, so a test can make a turn cost what it needs.
	InputTokens, OutputTokens int
	// LimitResetIn, when set, answers as a plan's usage limit does:
	// Anthropic's unified rate-limit headers, rejected, resetting this
	// long after the request (a time computed when it arrives, so a slow
	// machine does not find it past).
	LimitResetIn time.Duration
}

func (r Reply) tokens() (in, out int) {
	in, out = 12, 7
	if r.InputTokens != 0 {
		in = r.InputTokens
	}
	if r.OutputTokens != 0 {
		out = r.OutputTokens
	}
	return in, out
}

// Call is one tool call the model makes: the tool's name as the API
// sees it and its input as JSON. A name starting with "~" is a suffix:
// the call goes to the first tool the request offers whose name ends so
// (CLIs name MCP tools in their own ways: mcp__lazy__lazy_comment, ...).
// Cwd in Input stands for the CLI's working directory, as its request
// states it (Claude's "Primary working directory", Codex's <cwd>),
// JSON-escaped: tools such as Claude's Write take absolute paths.
type Call struct {
	Name  string
	Input string
}

// Cwd is the placeholder of a Call's Input for the CLI's working
// directory.
const Cwd = "{cwd}"

// ToolResult is what an agent CLI sent back for one tool call the model
// made: the call (tool name and input) and the result's text.
type ToolResult struct {
	ID, Name, Input string
	Output          string
	// IsError is the Anthropic API's is_error; Codex has no such flag,
	// its output says how a command ended.
	IsError bool
}

// Server is a running mock of both APIs.
type Server struct {
	URL string // http://127.0.0.1:<port>

	mu        sync.Mutex
	anthropic []Reply
	openai    []Reply
	calls     map[string]int
	requests  []string
	bodies    map[string][]string
	srv       *http.Server
	ln        net.Listener
}

// Start serves the mock on a free port of 127.0.0.1.
func Start(anthropic, openai []Reply) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mock API: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), anthropic: anthropic, openai: openai, calls: map[string]int{}, bodies: map[string][]string{}, ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/messages", s.messages)
	mux.HandleFunc("/v1/responses", s.responses)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.note(r.Method + " " + r.URL.Path)
		http.NotFound(w, r)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() { _ = s.srv.Close() }

// Calls returns how many model calls an API ("anthropic", "openai") got.
func (s *Server) Calls(api string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[api]
}

// Requests lists every request seen (method and path), for diagnosis.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// Bodies returns the request bodies of an API's model calls, in order.
func (s *Server) Bodies(api string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies[api]...)
}

// ToolResults returns the results of the tool calls an API's model made,
// in the order they came back, each once (every request repeats the
// conversation so far).
func (s *Server) ToolResults(api string) []ToolResult {
	var out []ToolResult
	seen := map[string]bool{}
	for _, body := range s.Bodies(api) {
		for _, r := range toolResults(api, []byte(body)) {
			if !seen[r.ID] {
				seen[r.ID] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// toolResults reads the calls and their results out of one request.
func toolResults(api string, body []byte) []ToolResult {
	calls := map[string]ToolResult{}
	var out []ToolResult
	if api == "anthropic" {
		var req struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		for _, m := range req.Messages {
			var blocks []struct {
				Type      string          `json:"type"`
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Input     json.RawMessage `json:"input"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
				IsError   bool            `json:"is_error"`
			}
			if json.Unmarshal(m.Content, &blocks) != nil {
				continue
			}
			for _, b := range blocks {
				switch b.Type {
				case "tool_use":
					calls[b.ID] = ToolResult{ID: b.ID, Name: b.Name, Input: string(b.Input)}
				case "tool_result":
					r := calls[b.ToolUseID]
					r.ID, r.Output, r.IsError = b.ToolUseID, contentText(b.Content), b.IsError
					out = append(out, r)
				}
			}
		}
		return out
	}
	var req struct {
		Input []struct {
			Type      string `json:"type"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Input     string `json:"input"`
			Output    any    `json:"output"`
		} `json:"input"`
	}
	_ = json.Unmarshal(body, &req)
	for _, it := range req.Input {
		switch it.Type {
		case "function_call", "custom_tool_call":
			calls[it.CallID] = ToolResult{ID: it.CallID, Name: it.Name, Input: it.Arguments + it.Input}
		case "function_call_output", "custom_tool_call_output":
			r := calls[it.CallID]
			r.ID = it.CallID
			if b, err := json.Marshal(it.Output); err == nil {
				r.Output = contentText(b)
			}
			out = append(out, r)
		}
	}
	return out
}

// contentText is a tool result's text: a string, or the text parts of a
// list of content blocks.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// cwdOf finds the working directory a CLI states in its request.
func cwdOf(body []byte) string {
	for _, re := range []*regexp.Regexp{claudeCwd, codexCwd} {
		if m := re.FindSubmatch(body); m != nil {
			var s string
			if json.Unmarshal(append(append([]byte{'"'}, m[1]...), '"'), &s) == nil {
				return s
			}
		}
	}
	return ""
}

var (
	claudeCwd = regexp.MustCompile(`Primary working directory: ((?:[^"\\]|\\.)*?)(?:\\n|")`)
	codexCwd  = regexp.MustCompile(`<cwd>((?:[^"<\\]|\\.)*)</cwd>`)
)

// nextCall returns the tool call a request with body should get, if any,
// and the id to give it (prefix, then a number). A reply picked by When
// counts only its own calls' results, told by their ids: the CLIs do not
// keep a turn's prompt before its tool results (Claude merges them into
// one message, prompt last).
func nextCall(api string, rep Reply, body []byte, prefix string) (Call, string, bool) {
	k := 0
	if rep.When != "" {
		h := fnv.New32a()
		_, _ = h.Write([]byte(rep.When))
		prefix += fmt.Sprintf("%08x_", h.Sum32())
		for _, r := range toolResults(api, body) {
			if strings.HasPrefix(r.ID, prefix) {
				k++
			}
		}
	} else {
		k = len(toolResults(api, body))
	}
	id := fmt.Sprintf("%s%d", prefix, k+1)
	if k >= len(rep.Tools) {
		return Call{}, id, false
	}
	c := rep.Tools[k]
	if strings.Contains(c.Input, Cwd) {
		cwd, _ := json.Marshal(cwdOf(body))
		c.Input = strings.ReplaceAll(c.Input, Cwd, string(cwd[1:len(cwd)-1]))
	}
	if suffix, ok := strings.CutPrefix(c.Name, "~"); ok {
		for _, name := range toolNames(body) {
			if strings.HasSuffix(name, suffix) {
				c.Name = name
				break
			}
		}
	}
	return c, id, true
}

// toolNames lists the tools a request offers, in either API's shape
// (MCP tools may sit in a namespace's own list).
func toolNames(body []byte) []string {
	type tool struct {
		Name  string `json:"name"`
		Tools []tool `json:"tools"`
	}
	var req struct {
		Tools []tool `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	var names []string
	for _, t := range req.Tools {
		if t.Name != "" && len(t.Tools) == 0 {
			names = append(names, t.Name)
		}
		for _, sub := range t.Tools {
			names = append(names, t.Name+"/"+sub.Name) // namespace/name
		}
	}
	return names
}

func (s *Server) note(r string) {
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.mu.Unlock()
}

func (s *Server) next(api string, script []Reply, body []byte) Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodies[api] = append(s.bodies[api], string(body))
	n := s.calls[api]
	s.calls[api]++
	if len(script) == 0 {
		return Reply{Text: "ok"}
	}
	if script[0].When != "" || script[len(script)-1].When != "" {
		for i := len(script) - 1; i >= 0; i-- {
			if w := script[i].When; w != "" && strings.Contains(string(body), w) {
				return script[i]
			}
		}
		return Reply{Text: "ok"}
	}
	if n >= len(script) {
		n = len(script) - 1
	}
	return script[n]
}

// messages is the Anthropic Messages API (POST /v1/messages).
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	s.note(r.Method + " " + r.URL.Path)
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Stream   bool              `json:"stream"`
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	rep := s.next("anthropic", s.anthropic, body)
	for k, v := range rep.Headers {
		w.Header().Set(k, v)
	}
	if rep.LimitResetIn > 0 {
		reset := fmt.Sprint(time.Now().Add(rep.LimitResetIn).Unix())
		for k, v := range map[string]string{"status": "rejected", "reset": reset, "5h-status": "rejected", "5h-reset": reset, "representative-claim": "five_hour"} {
			w.Header().Set("anthropic-ratelimit-unified-"+k, v)
		}
	}
	in, out := rep.tokens()
	if rep.Status != 0 && rep.Status != http.StatusOK {
		typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}[rep.Status]
		if typ == "" {
			typ = "api_error"
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("request-id", "req_mock")
		w.WriteHeader(rep.Status)
		if rep.ErrorBody != "" {
			_, _ = io.WriteString(w, rep.ErrorBody)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": rep.Message}})
		return
	}
	call, toolID, useTool := nextCall("anthropic", rep, body, "toolu_mock")
	if !req.Stream {
		content := []any{map[string]any{"type": "text", "text": rep.Text}}
		stop := "end_turn"
		if useTool {
			content = []any{map[string]any{"type": "tool_use", "id": toolID, "name": call.Name, "input": json.RawMessage(call.Input)}}
			stop = "tool_use"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "msg_mock", "type": "message", "role": "assistant", "model": req.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": map[string]any{"input_tokens": in, "output_tokens": out}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	ev := func(name string, v any) {
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_mock", "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": in, "output_tokens": 1}}})
	stop := "end_turn"
	if useTool {
		stop = "tool_use"
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use", "id": toolID, "name": call.Name, "input": map[string]any{}}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": call.Input}})
	} else {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": rep.Text}})
	}
	ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": out}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

// responses is the OpenAI Responses API (POST /v1/responses), streamed.
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	s.note(r.Method + " " + r.URL.Path)
	body, _ := io.ReadAll(r.Body)
	rep := s.next("openai", s.openai, body)
	for k, v := range rep.Headers {
		w.Header().Set(k, v)
	}
	in, out := rep.tokens()
	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		if rep.ErrorBody != "" {
			_, _ = io.WriteString(w, rep.ErrorBody)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": rep.Message, "type": "invalid_request_error", "code": nil}})
		return
	}
	call, callID, useTool := nextCall("openai", rep, body, "call_mock")
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(v map[string]any) {
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	resp := map[string]any{"id": "resp_mock", "object": "response", "status": "in_progress", "output": []any{}}
	ev(map[string]any{"type": "response.created", "sequence_number": 0, "response": resp})
	if rep.Drop {
		return // no response.completed: "stream closed before response.completed"
	}
	var item map[string]any
	if useTool {
		item = map[string]any{"type": "function_call", "id": "fc_" + callID, "call_id": callID, "name": call.Name, "arguments": call.Input, "status": "completed"}
		if ns, name, ok := strings.Cut(call.Name, "/"); ok {
			// Codex groups an MCP server's tools in a namespace.
			item["namespace"], item["name"] = ns, name
		}
	} else {
		item = map[string]any{"type": "message", "id": "msg_mock", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}}}}
	}
	ev(map[string]any{"type": "response.output_item.done", "sequence_number": 1, "output_index": 0, "item": item})
	done := map[string]any{"id": "resp_mock", "object": "response", "status": "completed", "output": []any{item},
		"usage": map[string]any{"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens": out,
			"output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": in + out}}
	ev(map[string]any{"type": "response.completed", "sequence_number": 2, "response": done})
}
