package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html"

	"github.com/toolsd/toolsd/registry"
)

const webfetchDescription = `Fetches a web page or file by URL and returns its content as markdown (default), plain text or raw HTML.

Usage:
- url must be a full http:// or https:// URL.
- format: "markdown" (HTML turned into markdown: best for reading docs), "text" (only the text), or "html" (the raw page).
- timeout is in seconds (default %[1]d, at most %[2]d).
- Redirects are followed (at most %[3]d). Bodies over %[4]s are refused. Images come back as attachments; other binary content is refused.
- Long pages are cut before you see them; the note names a toolsd://output/<id> path to read or grep the rest.
- It only reads: it sends no cookies or credentials and cannot log in.`

type httpRoundTripper = http.RoundTripper

func webfetchTool(o *Options) *registry.Tool {
	s := schema{
		props: []prop{
			{"url", map[string]any{"type": "string", "minLength": 1, "description": "The URL to fetch (http:// or https://)."}},
			{"format", map[string]any{"type": "string", "enum": []string{"markdown", "text", "html"}, "description": "How to return the content: markdown (default), text or html."}},
			{"timeout", map[string]any{"type": "number", "exclusiveMinimum": 0, "maximum": o.WebfetchMaxTimeout.Seconds(), "description": fmt.Sprintf("Time limit in seconds (default %d, at most %d).", int(o.WebfetchDefaultTimeout.Seconds()), int(o.WebfetchMaxTimeout.Seconds()))}},
		},
		required: []string{"url"},
	}
	return &registry.Tool{
		ID:          "webfetch",
		Description: fmt.Sprintf(webfetchDescription, int(o.WebfetchDefaultTimeout.Seconds()), int(o.WebfetchMaxTimeout.Seconds()), o.WebfetchMaxRedirects, sizeWords(o.WebfetchMaxBytes)),
		Parameters:  s.raw(),
		Permission:  "webfetch",
		Changes:     registry.ChangesNone,
		Execute: func(ctx context.Context, call *registry.Call, args json.RawMessage) (*registry.Result, error) {
			var a struct {
				URL     string   `json:"url"`
				Format  *string  `json:"format"`
				Timeout *float64 `json:"timeout"`
			}
			if err := decode(args, &a); err != nil {
				return nil, err
			}
			return runWebfetch(ctx, o, call, a.URL, deref(a.Format), a.Timeout)
		},
	}
}

func runWebfetch(ctx context.Context, o *Options, call *registry.Call, rawURL, format string, timeoutSec *float64) (*registry.Result, error) {
	if format == "" {
		format = "markdown"
	}
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url %q is not a full http:// or https:// URL: give one like https://example.com/page", rawURL)
	}
	if u.User != nil {
		return nil, errors.New("url must not contain a user name or password")
	}
	timeout := o.WebfetchDefaultTimeout
	if timeoutSec != nil && *timeoutSec > 0 {
		timeout = min(time.Duration(*timeoutSec*float64(time.Second)), o.WebfetchMaxTimeout)
	}
	if err := call.Ask(ctx, registry.AskRequest{Permission: "webfetch", Patterns: []string{u.String()}, Always: exactly(u.String()), Metadata: map[string]any{"url": u.String(), "format": format}}); err != nil {
		return nil, err
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	transport := o.WebfetchTransport
	if transport == nil {
		transport = http.DefaultTransport
	}
	redirects := 0
	client := &http.Client{
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			redirects = len(via)
			if len(via) > o.WebfetchMaxRedirects {
				return fmt.Errorf("more than %d redirects", o.WebfetchMaxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to a %s: URL", req.URL.Scheme)
			}
			return nil
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("url %q: %v", rawURL, err)
	}
	req.Header.Set("User-Agent", "toolsd-webfetch/1 (+https://github.com/toolsd/toolsd)")
	switch format {
	case "markdown":
		req.Header.Set("Accept", "text/markdown;q=1.0, text/html;q=0.9, text/plain;q=0.8, */*;q=0.1")
	case "text":
		req.Header.Set("Accept", "text/plain;q=1.0, text/html;q=0.9, */*;q=0.1")
	default:
		req.Header.Set("Accept", "text/html;q=1.0, */*;q=0.1")
	}
	resp, err := client.Do(req)
	if err != nil {
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return nil, fmt.Errorf("fetching %s timed out after %s: try again with a larger timeout (at most %d s), or another URL", u, timeout, int(o.WebfetchMaxTimeout.Seconds()))
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("fetching %s failed: %v", u, err)
	}
	defer resp.Body.Close()
	final := resp.Request.URL.String()
	if resp.StatusCode >= 400 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("fetching %s failed: HTTP %s%s", final, resp.Status, quoteSnippet(snippet))
	}
	if resp.ContentLength > o.WebfetchMaxBytes {
		return nil, fmt.Errorf("%s is %d bytes, over the %d KiB limit of webfetch", final, resp.ContentLength, o.WebfetchMaxBytes>>10)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, o.WebfetchMaxBytes+1))
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("fetching %s timed out after %s while reading the body", final, timeout)
		}
		return nil, fmt.Errorf("reading %s failed: %v", final, err)
	}
	if int64(len(body)) > o.WebfetchMaxBytes {
		return nil, fmt.Errorf("%s is larger than the %d KiB limit of webfetch", final, o.WebfetchMaxBytes>>10)
	}
	ctype := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ctype)
	if mt == "" {
		mt = http.DetectContentType(body)
		mt, _, _ = mime.ParseMediaType(mt)
	}
	meta := map[string]any{"url": u.String(), "finalURL": final, "status": resp.StatusCode, "contentType": ctype, "bytes": len(body), "redirects": redirects, "format": format}
	title := fmt.Sprintf("%s (%s)", final, mt)
	if strings.HasPrefix(mt, "image/") && mt != "image/svg+xml" {
		return &registry.Result{Title: title, Output: fmt.Sprintf("Fetched an image (%s, %d bytes); it is attached.", mt, len(body)), Metadata: meta,
			Attachments: []registry.Attachment{{Mime: mt, Filename: lastSegment(resp.Request.URL), Data: body}}}, nil
	}
	isHTML := mt == "text/html" || mt == "application/xhtml+xml"
	if !isHTML && !isTextual(mt) {
		if !utf8.Valid(body) || bytes.IndexByte(body, 0) >= 0 {
			return nil, fmt.Errorf("%s returned binary content (%s, %d bytes): webfetch returns text and images only", final, mt, len(body))
		}
	}
	text := strings.ToValidUTF8(string(body), "\uFFFD")
	if isHTML {
		switch format {
		case "markdown":
			md, err := htmltomarkdown.ConvertString(text, converter.WithDomain(final), converter.WithContext(ctx))
			if err != nil {
				return nil, fmt.Errorf("turning the HTML of %s into markdown failed: %v; try format \"text\" or \"html\"", final, err)
			}
			text = md
		case "text":
			text = htmlText(text)
		}
	}
	if strings.TrimSpace(text) == "" {
		text = "(The page has no text content.)"
	}
	return &registry.Result{Title: title, Output: text, Metadata: meta}, nil
}

// sizeWords says n bytes in MiB or KiB.
func sizeWords(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

func isTextual(mt string) bool {
	if strings.HasPrefix(mt, "text/") {
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-javascript",
		"application/ld+json", "application/rss+xml", "application/atom+xml", "application/x-yaml",
		"application/yaml", "application/toml", "image/svg+xml", "application/x-sh":
		return true
	}
	return strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml")
}

func quoteSnippet(b []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), ""))
	if s == "" {
		return ""
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return ": " + s
}

func lastSegment(u *url.URL) string {
	p := strings.TrimSuffix(u.Path, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	if p == "" {
		return "download"
	}
	return p
}

// htmlText returns the visible text of an HTML document, one block per line.
func htmlText(doc string) string {
	z := html.NewTokenizer(strings.NewReader(doc))
	var b strings.Builder
	skip := 0
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return collapseBlankLines(b.String())
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style", "noscript", "iframe", "object", "embed", "template", "svg":
				if tt == html.StartTagToken {
					skip++
				}
			case "br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "header", "footer", "pre", "blockquote", "table":
				b.WriteByte('\n')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style", "noscript", "iframe", "object", "embed", "template", "svg":
				if skip > 0 {
					skip--
				}
			case "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "pre", "blockquote", "table":
				b.WriteByte('\n')
			}
		case html.TextToken:
			if skip == 0 {
				t := strings.Join(strings.Fields(string(z.Text())), " ")
				if t != "" {
					if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
						b.WriteByte(' ')
					}
					b.WriteString(t)
				}
			}
		}
	}
}

func collapseBlankLines(s string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		l = strings.TrimSpace(l)
		if l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
