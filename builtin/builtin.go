// Package builtin implements toolsd's built-in tools: read, write, edit, apply_patch, glob,
// grep, list, bash, webfetch, todowrite and todoread.
//
// Tools returns them as registry tools. Every tool that takes a path resolves it with one
// resolver (paths.go): relative to the workspace, symlinks resolved to the real target,
// anything outside the workspace asked for as external_directory before the tool's own
// permission. See doc.go for what is guarded against races.
package builtin

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/toolsd/toolsd/internal/jsondec"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

// Options tune the built-in tools. The zero value (or nil) means the defaults below.
type Options struct {
	// BashDefaultTimeout is the time limit of a bash call that names none (2 minutes).
	BashDefaultTimeout time.Duration
	// BashMaxTimeout is the largest time limit a bash call may ask for (10 minutes).
	BashMaxTimeout time.Duration
	// BashGrace is how long a killed process tree has between SIGTERM and SIGKILL (2 s).
	BashGrace time.Duration
	// BashProgressInterval is how often the live tail of a bash call is published (100 ms).
	BashProgressInterval time.Duration
	// Shell is the shell bash runs with (the "bash" on PATH).
	Shell string
	// Sandbox, if set, says how a call of the tool named runs confined (docs/sandbox.md).
	Sandbox func(tool string) *sandbox.Confinement

	// ReadLimit is how many lines read returns when the call names no limit (2000).
	ReadLimit int
	// ReadMaxLineLength is where read cuts a long line (2000 bytes).
	ReadMaxLineLength int
	// ReadMaxBytes caps the text one read returns (50 KiB); the model pages on with offset.
	ReadMaxBytes int
	// MaxAttachmentBytes caps an image or PDF returned by read (10 MiB).
	MaxAttachmentBytes int64

	// MaxEditBytes caps a file write, edit or apply_patch reads to change it (64 MiB).
	MaxEditBytes int64

	// SearchLimit caps the results of glob and grep (100 files / matches).
	SearchLimit int
	// ListLimit caps the entries of list (1000).
	ListLimit int

	// WebfetchMaxBytes caps a fetched body (5 MiB).
	WebfetchMaxBytes int64
	// WebfetchDefaultTimeout and WebfetchMaxTimeout bound a fetch (30 s, 120 s).
	WebfetchDefaultTimeout time.Duration
	WebfetchMaxTimeout     time.Duration
	// WebfetchMaxRedirects is how many redirects a fetch follows (5).
	WebfetchMaxRedirects int
	// WebfetchTransport, if set, replaces the HTTP transport (tests).
	WebfetchTransport httpRoundTripper

	// UsePatch reports whether a model gets apply_patch instead of edit and write. nil means
	// GPT-family models do (providerID "openai", or a modelID containing gpt, codex, o1, o3
	// or o4).
	UsePatch func(m *protocol.Model) bool
}

func (o *Options) withDefaults() *Options {
	var c Options
	if o != nil {
		c = *o
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.BashDefaultTimeout, 2*time.Minute)
	def(&c.BashMaxTimeout, 10*time.Minute)
	if c.BashDefaultTimeout > c.BashMaxTimeout {
		c.BashDefaultTimeout = c.BashMaxTimeout
	}
	def(&c.BashGrace, 2*time.Second)
	def(&c.BashProgressInterval, 100*time.Millisecond)
	if c.Shell == "" {
		c.Shell = "bash"
	}
	defInt(&c.ReadLimit, 2000)
	defInt(&c.ReadMaxLineLength, 2000)
	defInt(&c.ReadMaxBytes, 50*1024)
	if c.MaxAttachmentBytes <= 0 {
		c.MaxAttachmentBytes = 10 << 20
	}
	if c.MaxEditBytes <= 0 {
		c.MaxEditBytes = 64 << 20
	}
	defInt(&c.SearchLimit, 100)
	defInt(&c.ListLimit, 1000)
	if c.WebfetchMaxBytes <= 0 {
		c.WebfetchMaxBytes = 5 << 20
	}
	def(&c.WebfetchDefaultTimeout, 30*time.Second)
	def(&c.WebfetchMaxTimeout, 120*time.Second)
	defInt(&c.WebfetchMaxRedirects, 5)
	if c.UsePatch == nil {
		c.UsePatch = IsGPTFamily
	}
	return &c
}

// IsGPTFamily reports whether m is a GPT-family model, which gets apply_patch instead of
// edit and write by default.
func IsGPTFamily(m *protocol.Model) bool {
	if m == nil {
		return false
	}
	if strings.EqualFold(m.ProviderID, "openai") {
		return true
	}
	id := strings.ToLower(m.ModelID)
	for _, s := range []string{"gpt", "codex", "o1", "o3", "o4"} {
		if strings.Contains(id, s) {
			return true
		}
	}
	return false
}

// Tools returns every built-in tool, configured by opts (nil means defaults). The tools
// are independent of each other and safe for concurrent use.
func Tools(opts *Options) []*registry.Tool {
	o := opts.withDefaults()
	usePatch := o.UsePatch
	noPatch := func(m *protocol.Model) bool { return !usePatch(m) }
	tools := []*registry.Tool{
		readTool(o),
		bashTool(o),
		writeTool(o),
		editTool(o),
		applyPatchTool(o),
		globTool(o),
		grepTool(o),
		listTool(o),
		webfetchTool(o),
		todoWriteTool(o),
		todoReadTool(o),
	}
	for _, t := range tools {
		t.Source = registry.SourceBuiltin
		t.Annotations = annotations[t.ID]
		switch t.ID {
		case "apply_patch":
			t.Models = usePatch
		case "edit", "write":
			t.Models = noPatch
		}
	}
	return tools
}

// annotations are the built-ins' hints for clients (MCP tool annotations).
var annotations = func() map[string]*protocol.ToolAnnotations {
	yes, no := true, false
	local := func(readOnly bool, destructive *bool, idempotent bool) *protocol.ToolAnnotations {
		return &protocol.ToolAnnotations{ReadOnlyHint: readOnly, DestructiveHint: destructive, IdempotentHint: idempotent, OpenWorldHint: &no}
	}
	readOnly := local(true, nil, true)
	return map[string]*protocol.ToolAnnotations{
		"read": readOnly, "glob": readOnly, "grep": readOnly, "list": readOnly, "todoread": readOnly,
		"todowrite":   local(false, &no, true),
		"write":       local(false, &yes, true),
		"edit":        local(false, &yes, false),
		"apply_patch": local(false, &yes, false),
		"bash":        {DestructiveHint: &yes, OpenWorldHint: &yes},
		"webfetch":    {ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &yes},
	}
}()

// schema is a JSON Schema object with its properties in a fixed order, so the golden files
// and what models see are stable.
type schema struct {
	props    []prop
	required []string
}

type prop struct {
	name string
	def  map[string]any
}

func (s schema) MarshalJSON() ([]byte, error) {
	b := []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{`)
	for i, p := range s.props {
		if i > 0 {
			b = append(b, ',')
		}
		name, err := json.Marshal(p.name)
		if err != nil {
			return nil, err
		}
		def, err := json.Marshal(p.def)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, name...), ':'), def...)
	}
	required, err := json.Marshal(append([]string{}, s.required...)) // [] when none
	if err != nil {
		return nil, err
	}
	b = append(append(append(b, `},"required":`...), required...), `,"additionalProperties":false}`...)
	return b, nil
}

// raw is the schema's JSON (static definitions: an error is a bug; TestSchemasGolden
// compiles every one).
func (s schema) raw() json.RawMessage {
	b, err := s.MarshalJSON()
	if err != nil {
		panic(err)
	}
	return b
}

// decode decodes validated args into v. A JSON null for an optional property leaves the
// field at its zero value, which every tool reads as "absent".
func decode(args json.RawMessage, v any) error {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return jsondec.Unmarshal(args, v)
}
