// Package fakemodel is a model server on loopback for end-to-end tests of real agent CLIs
// (Claude Code, Codex) offline: Anthropic's Messages API, streamed as server-sent events as
// Claude Code requires, and OpenAI's Responses API for Codex. A request whose conversation has
// no tool result yet is answered with the next tool call of the script; one that has is
// answered with text; every request is kept for the test to read.
package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// ToolCall is a tool call the fake model makes.
type ToolCall struct {
	Name  string
	Input map[string]any
}

// Server is a fake model server. Safe for concurrent use.
type Server struct {
	URL string
	srv *http.Server
	ln  net.Listener

	mu       sync.Mutex // guards calls, requests and seq
	calls    []ToolCall // the script: one tool call per turn that has no tool result yet
	requests []Request
	seq      int
}

// Request is one request the server got.
type Request struct {
	Path string
	Body map[string]any
	Raw  string
}

// Start starts a server on a loopback port that makes the calls, in order, one per turn.
func Start(calls ...ToolCall) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), ln: ln, calls: calls}
	s.srv = &http.Server{Handler: s}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Requests are the requests so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ToolResults are the texts of the tool results the agent sent back, in order.
func (s *Server) ToolResults() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range s.Requests() {
		for _, t := range toolResults(r.Body) {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Path: r.URL.Path, Body: body, Raw: string(raw)})
	s.seq++
	seq := s.seq
	var call *ToolCall
	_, hasTools := body["tools"]
	if hasTools && len(toolResults(body)) == 0 && len(s.calls) > 0 {
		c := s.calls[0]
		s.calls = s.calls[1:]
		call = &c
	}
	s.mu.Unlock()
	switch {
	case strings.HasSuffix(r.URL.Path, "/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 10})
	case strings.HasSuffix(r.URL.Path, "/messages"):
		s.anthropic(w, body, call, seq)
	case strings.HasSuffix(r.URL.Path, "/responses"):
		s.openai(w, call, seq)
	default:
		http.NotFound(w, r)
	}
}

// toolResults are the texts of the tool results in a request (either API).
func toolResults(body map[string]any) []string {
	var out []string
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		content, _ := mm["content"].([]any)
		for _, c := range content {
			cm, _ := c.(map[string]any)
			if cm["type"] == "tool_result" {
				out = append(out, textOf(cm["content"]))
			}
		}
	}
	input, _ := body["input"].([]any)
	for _, it := range input {
		im, _ := it.(map[string]any)
		if im["type"] == "function_call_output" || im["type"] == "custom_tool_call_output" {
			out = append(out, textOf(im["output"]))
		}
	}
	return out
}

func textOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var b strings.Builder
		for _, e := range x {
			if m, ok := e.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					b.WriteString(t)
				}
			}
		}
		return b.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// anthropic answers a Messages request, streamed when it asks to be.
func (s *Server) anthropic(w http.ResponseWriter, body map[string]any, call *ToolCall, seq int) {
	model, _ := body["model"].(string)
	id := fmt.Sprintf("msg_fake_%d", seq)
	var block map[string]any
	stop := "end_turn"
	input := "{}"
	if call != nil {
		b, _ := json.Marshal(call.Input)
		input = string(b)
		block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_fake_%d", seq), "name": call.Name, "input": map[string]any{}}
		stop = "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": ""}
	}
	usage := map[string]any{"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	if stream, _ := body["stream"].(bool); !stream {
		full := map[string]any{"type": "text", "text": "done"}
		if call != nil {
			full = map[string]any{"type": "tool_use", "id": block["id"], "name": call.Name, "input": call.Input}
		}
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{full},
			"stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": block})
	if call != nil {
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": input}})
	} else {
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "done"}})
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// openai answers a Responses request with a stream of events.
func (s *Server) openai(w http.ResponseWriter, call *ToolCall, seq int) {
	w.Header().Set("Content-Type", "text/event-stream")
	respID := fmt.Sprintf("resp_fake_%d", seq)
	var item map[string]any
	if call != nil {
		args, _ := json.Marshal(call.Input)
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", seq), "call_id": fmt.Sprintf("call_fake_%d", seq), "name": call.Name, "arguments": string(args), "status": "completed"}
	} else {
		item = map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", seq), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "done", "annotations": []any{}}}}
	}
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": respID, "status": "in_progress", "output": []any{}}})
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": respID, "status": "completed", "output": []any{item},
		"usage": map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15}}})
}
