package builtin

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestWebfetch(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>T</title><style>.x{color:red}</style><script>var secret=1</script></head>
<body><h1>Hello</h1><p>Some <b>bold</b> text and a <a href="/other">link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>`)
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "just text\n")
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"a":1}`)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/plain", http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no such page", http.StatusNotFound) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "3000")
		w.Write([]byte(strings.Repeat("x", 3000)))
	})
	mux.HandleFunc("/bigchunked", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for range 3 {
			w.Write([]byte(strings.Repeat("y", 1000)))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/bin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte{0, 1, 2, 0xff, 0xfe})
	})
	mux.HandleFunc("/img.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 16)...))
	})
	release := make(chan struct{})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(release)

	tests := []struct {
		name    string
		args    map[string]any
		want    []string
		notWant []string
		err     string
		attach  bool
	}{
		{name: "markdown", args: map[string]any{"url": srv.URL + "/page"}, want: []string{"# Hello", "**bold**", "[link](" + srv.URL + "/other)", "- one"}, notWant: []string{"secret", "color:red"}},
		{name: "text", args: map[string]any{"url": srv.URL + "/page", "format": "text"}, want: []string{"Hello\nSome bold text and a link .", "one\ntwo"}, notWant: []string{"secret", "<p>"}},
		{name: "html", args: map[string]any{"url": srv.URL + "/page", "format": "html"}, want: []string{"<h1>Hello</h1>"}},
		{name: "plain", args: map[string]any{"url": srv.URL + "/plain"}, want: []string{"just text"}},
		{name: "json", args: map[string]any{"url": srv.URL + "/json"}, want: []string{`{"a":1}`}},
		{name: "redirect", args: map[string]any{"url": srv.URL + "/redirect"}, want: []string{"just text"}},
		{name: "redirect loop", args: map[string]any{"url": srv.URL + "/loop"}, err: "more than 5 redirects"},
		{name: "404", args: map[string]any{"url": srv.URL + "/missing"}, err: "HTTP 404 Not Found: no such page"},
		{name: "too big", args: map[string]any{"url": srv.URL + "/big"}, err: "over the 2 KiB limit"},
		{name: "too big chunked", args: map[string]any{"url": srv.URL + "/bigchunked"}, err: "larger than the 2 KiB limit"},
		{name: "binary", args: map[string]any{"url": srv.URL + "/bin"}, err: "binary content"},
		{name: "image", args: map[string]any{"url": srv.URL + "/img.png"}, want: []string{"Fetched an image"}, attach: true},
		{name: "timeout", args: map[string]any{"url": srv.URL + "/slow", "timeout": 0.2}, err: "timed out after 200ms"},
		{name: "not a url", args: map[string]any{"url": "example.com/x"}, err: "not a full http:// or https:// URL"},
		{name: "file scheme", args: map[string]any{"url": "file:///etc/passwd"}, err: "not a full http"},
		{name: "refused connection", args: map[string]any{"url": "http://127.0.0.1:1/"}, err: "failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "")
			e.setOptions(&Options{WebfetchMaxBytes: 2048, WebfetchDefaultTimeout: 5 * time.Second})
			res, err := e.run("webfetch", tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, "output", res.Output, tc.want...)
			for _, nw := range tc.notWant {
				if strings.Contains(res.Output, nw) {
					t.Errorf("output contains %q:\n%s", nw, res.Output)
				}
			}
			if tc.attach != (len(res.Attachments) == 1) {
				t.Errorf("attachments %d", len(res.Attachments))
			}
			asks := e.asks.asked("webfetch")
			if len(asks) != 1 || asks[0].Patterns[0] != tc.args["url"] {
				t.Errorf("asks %+v", asks)
			}
		})
	}
	// Refused: no request is made.
	e := newEnv(t, "")
	e.asks.deny["webfetch"] = true
	if _, err := e.run("webfetch", map[string]any{"url": srv.URL + "/plain"}); !isPermissionError(err) {
		t.Fatalf("err = %v", err)
	}
	srv.CloseClientConnections()
}

func TestTodo(t *testing.T) {
	e := newEnv(t, "")
	res, err := e.run("todoread", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "output", res.Output, "empty")
	todos := []map[string]any{
		{"content": "Write the parser", "status": "in_progress", "priority": "high", "id": "1"},
		{"content": "Test it", "status": "pending", "priority": "medium", "id": "2"},
		{"content": "Old idea", "status": "cancelled", "priority": "low", "id": "3"},
	}
	res, err = e.run("todowrite", map[string]any{"todos": todos})
	if err != nil {
		t.Fatal(err)
	}
	if res.Title != "2 todos" || res.Metadata["open"] != 2 {
		t.Errorf("title %q meta %v", res.Title, res.Metadata)
	}
	res, err = e.run("todoread", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "output", res.Output, `"content": "Write the parser"`, `"status": "in_progress"`, `"id": "3"`)
	if got, _ := e.state.Get(t.Context(), "todos"); !strings.Contains(string(got), `"Test it"`) {
		t.Errorf("state %s", got)
	}
	_, err = e.run("todowrite", map[string]any{"todos": []map[string]any{todos[0], todos[0]}})
	if err == nil || !strings.Contains(err.Error(), `todo id "1" is used twice`) {
		t.Errorf("err = %v", err)
	}
}
