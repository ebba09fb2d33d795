package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsd/toolsd/registry"
)

// call runs one tools/call on the server: ask, call with progress and cancellation, map the
// result.
func (sv *server) call(ctx context.Context, call *registry.Call, id, name string, annotations map[string]any, args json.RawMessage) (*registry.Result, error) {
	var argMap map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &argMap); err != nil {
			return nil, fmt.Errorf("the arguments must be a JSON object: %v", err)
		}
	}
	if argMap == nil {
		argMap = map[string]any{}
	}
	meta := map[string]any{"server": sv.name, "tool": name, "args": json.RawMessage(nonEmpty(args))}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	if err := call.Ask(ctx, registry.AskRequest{Permission: id, Patterns: []string{"*"}, Metadata: meta}); err != nil {
		return nil, err
	}

	sv.mu.Lock()
	cs, down := sv.cs, sv.down
	sv.seq++
	token := "toolsd-" + strconv.FormatUint(sv.seq, 10)
	if cs != nil && call.Progress != nil {
		sv.progress[token] = func(p *sdk.ProgressNotificationParams) {
			md := map[string]any{"progress": p.Progress}
			if p.Total > 0 {
				md["total"] = p.Total
			}
			title := p.Message
			if title == "" && p.Total > 0 {
				title = fmt.Sprintf("%g/%g", p.Progress, p.Total)
			}
			call.Progress(title, md)
		}
	}
	sv.mu.Unlock()
	defer func() {
		sv.mu.Lock()
		delete(sv.progress, token)
		sv.mu.Unlock()
	}()
	if cs == nil {
		msg := fmt.Sprintf("the MCP server %q is not running", sv.name)
		if down != "" {
			msg += " (" + firstLine(down) + ")"
		}
		return nil, errors.New(msg + "; try again later or use another tool")
	}

	if err := call.BeginChanges(ctx); err != nil {
		return nil, err
	}
	params := &sdk.CallToolParams{Name: name, Arguments: argMap}
	params.SetProgressToken(token)
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("the MCP server %q failed the call to %q: %v", sv.name, name, err)
	}
	return mapResult(res, call.Output)
}

// mapResult turns an MCP result into the call's result: text to the output (written to out,
// so that large outputs are truncated and kept like a shell's), images and audio to
// attachments (always, structuredContent or not), structuredContent to metadata (and to the
// output as JSON when there is no text). isError makes the text the call's error.
func mapResult(res *sdk.CallToolResult, out io.Writer) (*registry.Result, error) {
	r := &registry.Result{Metadata: map[string]any{}}
	var texts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			texts = append(texts, c.Text)
		case *sdk.ImageContent:
			r.Attachments = append(r.Attachments, registry.Attachment{Mime: orDefault(c.MIMEType, "image/png"), Data: c.Data})
		case *sdk.AudioContent:
			r.Attachments = append(r.Attachments, registry.Attachment{Mime: orDefault(c.MIMEType, "audio/wav"), Data: c.Data})
		case *sdk.ResourceLink:
			line := "resource: " + c.URI
			if c.Name != "" {
				line += " (" + c.Name + ")"
			}
			texts = append(texts, line)
		case *sdk.EmbeddedResource:
			if c.Resource == nil {
				continue
			}
			switch {
			case c.Resource.Text != "":
				texts = append(texts, c.Resource.Text)
			case len(c.Resource.Blob) > 0:
				r.Attachments = append(r.Attachments, registry.Attachment{Mime: orDefault(c.Resource.MIMEType, "application/octet-stream"), Filename: baseName(c.Resource.URI), Data: c.Resource.Blob})
			}
		default:
			if b, err := json.Marshal(c); err == nil {
				texts = append(texts, string(b))
			}
		}
	}
	if res.StructuredContent != nil {
		r.Metadata["structuredContent"] = res.StructuredContent
	}
	if len(r.Attachments) > 0 {
		r.Metadata["attachments"] = len(r.Attachments)
	}
	text := strings.Join(texts, "\n")
	if res.IsError {
		if text == "" {
			text = "the MCP tool reported an error without a message"
		}
		return r, errors.New(text)
	}
	if text == "" && res.StructuredContent != nil {
		if b, err := json.MarshalIndent(res.StructuredContent, "", "  "); err == nil {
			text = string(b)
		}
	}
	if out != nil {
		if _, err := io.WriteString(out, text); err != nil {
			return nil, err
		}
	} else {
		r.Output = text
	}
	return r, nil
}

func nonEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return b
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func baseName(uri string) string {
	if i := strings.LastIndexByte(uri, '/'); i >= 0 {
		return uri[i+1:]
	}
	return uri
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
