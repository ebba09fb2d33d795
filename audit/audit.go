package audit

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsd/toolsd/protocol"
)

// Attribute keys of the exported spans.
const (
	AttrWorkspace   = "toolsd.workspace"
	AttrSession     = "toolsd.session.id"
	AttrMessage     = "toolsd.message.id"
	AttrCall        = "toolsd.call.id"
	AttrTool        = "toolsd.tool"
	AttrAgent       = "toolsd.agent"
	AttrStatus      = "toolsd.call.status"
	AttrError       = "toolsd.call.error"
	AttrPermission  = "toolsd.permission"
	AttrPatterns    = "toolsd.patterns"
	AttrDecision    = "toolsd.decision"
	AttrDecidedBy   = "toolsd.decided_by"
	AttrKind        = "toolsd.provenance.kind"
	AttrText        = "toolsd.provenance.text"
	AttrRule        = "toolsd.rule"
	AttrLayer       = "toolsd.rule.layer"
	AttrFile        = "toolsd.rule.file"
	AttrLine        = "toolsd.rule.line"
	AttrColumn      = "toolsd.rule.column"
	AttrRemembered  = "toolsd.remembered.at"
	AttrRememberBy  = "toolsd.remembered.by"
	AttrHook        = "toolsd.hook"
	AttrReason      = "toolsd.reason"
	AttrReasons     = "toolsd.reasons"
	AttrUntrusted   = "toolsd.untrusted_rule"
	AttrAnswer      = "toolsd.answer"
	AttrScope       = "toolsd.answer.scope"
	AttrAnsweredBy  = "toolsd.answered_by"
	AttrWaitedMs    = "toolsd.ask.waited_ms"
	AttrMessageText = "toolsd.answer.message"
)

// DefaultQueueSize is how many spans wait for export at most (OTEL_BSP_MAX_QUEUE_SIZE
// changes it); past it spans are dropped and counted.
const DefaultQueueSize = 2048

// The batching of spans, as OpenTelemetry's batch span processor does it (the standard
// OTEL_BSP_* settings): a batch goes out when it is full or when the schedule delay has
// passed since the last one.
const (
	defaultBatchSize     = 512
	defaultScheduleDelay = 5 * time.Second
	defaultExportTimeout = 30 * time.Second
)

// scopeName is the instrumentation scope of the spans.
const scopeName = "github.com/toolsd/toolsd/audit"

// Options configure New.
type Options struct {
	// Endpoint, if set, turns export on even when the environment does not, and names the
	// collector (a URL: http://collector:4318). The setting audit.otlpEndpoint.
	Endpoint string
	// Protocol is "grpc" or "http/protobuf" for Endpoint; "" takes the environment's.
	Protocol string
	// Version is toolsd's version (service.version); Workspace the workspace folder.
	Version, Workspace string
	Logger             *slog.Logger
	// Getenv reads the environment (every OTEL_ setting); nil means os.Getenv.
	Getenv func(string) string
}

// Exporter sends spans to a collector. A nil *Exporter exports nothing: every method is safe
// to call on it. Safe for concurrent use.
type Exporter struct {
	workspace string
	endpoint  string
	protocol  string
	log       *slog.Logger
	resource  []attr // sorted by key
	sender    *otlpExporter

	queue     chan *span // bounded: a span that does not fit is dropped
	batchSize int
	delay     time.Duration // the schedule delay
	timeout   time.Duration // of one export
	closed    atomic.Bool
	stop      chan struct{} // closed by Close: export what is queued, then end
	done      chan struct{} // closed when the batch loop has ended

	exported atomic.Int64
	dropped  atomic.Int64
	failed   atomic.Int64
	lastWarn atomic.Int64 // unix nanos of the last warning about lost spans

	errMu   sync.Mutex // guards lastErr
	lastErr string

	// exports is cancelled when Close runs out of time: an export blocked on a collector
	// that is down returns at once, and what is still queued counts as dropped.
	exports     context.Context
	stopExports context.CancelFunc
	closeOnce   sync.Once
}

// New returns an Exporter when the environment or o turns export on, and nil, nil when it
// is off. An environment that asks for something toolsd cannot do (another exporter, the
// http/json protocol) is an error saying so; the daemon logs it and runs without export.
func New(ctx context.Context, o Options) (*Exporter, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "otlp":
	case "", "none":
		if o.Endpoint == "" {
			return nil, nil
		}
	default:
		if o.Endpoint == "" {
			return nil, fmt.Errorf("audit: OTEL_TRACES_EXPORTER=%q is not supported: toolsd exports over OTLP only (set it to otlp)", exp)
		}
	}
	proto := o.Protocol
	if proto == "" {
		proto = firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto == "" {
		proto = "http/protobuf"
	}
	if proto != "grpc" && proto != "http/protobuf" {
		return nil, fmt.Errorf("audit: OTLP protocol %q is not supported: use grpc or http/protobuf", proto)
	}
	cfg, err := readConfig(proto, o.Endpoint, getenv)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	e := &Exporter{
		workspace: o.Workspace,
		// The collector as people name it: gRPC's method path is not theirs.
		endpoint:  strings.TrimSuffix(cfg.url, grpcExportPath),
		protocol:  proto,
		log:       o.Logger.With("component", "audit"),
		resource:  resourceAttrs(o.Version, getenv),
		sender:    newOTLPExporter(cfg, o.Version),
		batchSize: positive(getenv, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", defaultBatchSize),
		delay:     time.Duration(positive(getenv, "OTEL_BSP_SCHEDULE_DELAY", int(defaultScheduleDelay/time.Millisecond))) * time.Millisecond,
		timeout:   time.Duration(positive(getenv, "OTEL_BSP_EXPORT_TIMEOUT", int(defaultExportTimeout/time.Millisecond))) * time.Millisecond,
		queue:     make(chan *span, positive(getenv, "OTEL_BSP_MAX_QUEUE_SIZE", DefaultQueueSize)),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	e.batchSize = min(e.batchSize, cap(e.queue))
	e.exports, e.stopExports = context.WithCancel(context.Background())
	go e.run()
	e.log.Info("audit export on", "endpoint", e.endpoint, "protocol", proto, "queue", cap(e.queue))
	return e, nil
}

func firstSet(getenv func(string) string, keys ...string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
	}
	return ""
}

// positive reads a whole number above 0 from the environment, or gives def.
func positive(getenv func(string) string, key string, def int) int {
	if n, err := strconv.Atoi(strings.TrimSpace(getenv(key))); err == nil && n > 0 {
		return n
	}
	return def
}

// resourceAttrs describes the process to the collector: service.name toolsd and
// service.version, then OTEL_RESOURCE_ATTRIBUTES (key=value pairs, comma-separated, values
// percent-encoded; a pair without "=" is left out) and OTEL_SERVICE_NAME, which win.
func resourceAttrs(version string, getenv func(string) string) []attr {
	m := map[string]string{"service.name": "toolsd", "service.version": version}
	for pair := range strings.SplitSeq(getenv("OTEL_RESOURCE_ATTRIBUTES"), ",") {
		k, v, ok := strings.Cut(pair, "=")
		if k = strings.TrimSpace(k); !ok || k == "" {
			continue
		}
		v = strings.TrimSpace(v)
		if u, err := url.PathUnescape(v); err == nil {
			v = u
		}
		m[k] = v
	}
	if name := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); name != "" {
		m["service.name"] = name
	}
	attrs := make([]attr, 0, len(m))
	for k, v := range m {
		attrs = append(attrs, str(k, v))
	}
	slices.SortFunc(attrs, func(a, b attr) int { return strings.Compare(a.key, b.key) })
	return attrs
}

// run is the batch loop: it exports a batch when it is full or when the schedule delay has
// passed, and everything queued once Close stops it.
func (e *Exporter) run() {
	defer close(e.done)
	batch := make([]*span, 0, e.batchSize)
	send := func() {
		if len(batch) > 0 {
			e.export(batch)
			clear(batch)
			batch = batch[:0]
		}
	}
	tick := time.NewTicker(e.delay)
	defer tick.Stop()
	for {
		select {
		case s := <-e.queue:
			if batch = append(batch, s); len(batch) >= e.batchSize {
				send()
			}
		case <-tick.C:
			send()
		case <-e.stop:
			for {
				select {
				case s := <-e.queue:
					if batch = append(batch, s); len(batch) >= e.batchSize {
						send()
					}
				default:
					send()
					return
				}
			}
		}
	}
}

// export sends one batch and counts it; once Close has run out of time, it only counts.
func (e *Exporter) export(batch []*span) {
	n := int64(len(batch))
	if e.exports.Err() != nil {
		e.lost(n, &e.dropped, nil)
		return
	}
	ctx, cancel := context.WithTimeout(e.exports, e.timeout)
	defer cancel()
	msg, err := traceRequest(e.resource, batch)
	if err == nil {
		err = e.sender.export(ctx, msg)
	}
	if err != nil {
		if e.exports.Err() != nil {
			e.lost(n, &e.dropped, nil) // cut short by Close
			return
		}
		e.lost(n, &e.failed, err)
		return
	}
	e.exported.Add(n)
}

// enqueue hands a span to the batch loop, or drops and counts it when the queue is full or
// export has stopped: recording never waits for the collector.
func (e *Exporter) enqueue(s *span) {
	if e.closed.Load() {
		e.lost(1, &e.dropped, nil)
		return
	}
	select {
	case e.queue <- s:
	default:
		e.lost(1, &e.dropped, nil)
	}
}

// Status is what export has done so far.
type Status struct {
	Endpoint, Protocol string
	// Exported spans reached the collector; Dropped were left out because the queue was
	// full; Failed were sent but not taken (the collector was down or refused them).
	Exported, Dropped, Failed int64
	LastError                 string
}

// Status reports the counts; the zero Status for a nil Exporter.
func (e *Exporter) Status() Status {
	if e == nil {
		return Status{}
	}
	e.errMu.Lock()
	last := e.lastErr
	e.errMu.Unlock()
	return Status{Endpoint: e.endpoint, Protocol: e.protocol, Exported: e.exported.Load(), Dropped: e.dropped.Load(), Failed: e.failed.Load(), LastError: last}
}

// Lost says in a sentence how many spans did not reach the collector, and why ("" when none
// was lost).
func (s Status) Lost() string {
	if s.Dropped == 0 && s.Failed == 0 {
		return ""
	}
	msg := fmt.Sprintf("audit export to %s (%s): %d spans dropped because the queue was full, %d not delivered", s.Endpoint, s.Protocol, s.Dropped, s.Failed)
	if s.LastError != "" {
		msg += " (last error: " + s.LastError + ")"
	}
	return msg + "; calls are not slowed by it: check that the collector is up"
}

// Close flushes what is queued and stops export, waiting at most until ctx is done; spans
// still queued then count as dropped.
func (e *Exporter) Close(ctx context.Context) error {
	if e == nil {
		return nil
	}
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		close(e.stop)
		select {
		case <-e.done:
		case <-ctx.Done():
			// Out of time: cut short what is being sent; the loop counts the rest.
			e.stopExports()
			<-e.done
		}
		e.stopExports()
		// A span handed over while the loop made its last pass: not sent, counted.
		for n := len(e.queue); n > 0; n-- {
			<-e.queue
			e.lost(1, &e.dropped, nil)
		}
		_ = e.sender.Shutdown(ctx)
		s := e.Status()
		e.log.Info("audit export stopped", "exported", s.Exported, "dropped", s.Dropped, "failed", s.Failed)
	})
	return nil
}

// lost counts spans that did not reach the collector and warns, at most once a minute.
func (e *Exporter) lost(n int64, counter *atomic.Int64, err error) {
	counter.Add(n)
	if err != nil {
		e.errMu.Lock()
		e.lastErr = err.Error()
		e.errMu.Unlock()
	}
	now := time.Now().UnixNano()
	last := e.lastWarn.Load()
	if now-last > int64(time.Minute) && e.lastWarn.CompareAndSwap(last, now) {
		e.log.Warn(e.Status().Lost())
	}
}

// span is one exported span: an OpenTelemetry span of kind internal, sampled, whose parent
// (if any) is in the same process.
type span struct {
	name       string
	trace      [16]byte
	id, parent [8]byte // parent: zero for a root span
	start, end time.Time
	attrs      []attr
	failed     bool   // status Error, with errText
	errText    string // the status's description
}

// attr is an attribute: a string, a whole number or a list of strings.
type attr struct {
	key  string
	kind attrKind
	s    string
	n    int64
	ss   []string
}

type attrKind uint8

const (
	attrString attrKind = iota
	attrInt
	attrStrings
)

func str(k, v string) attr           { return attr{key: k, s: v} }
func num(k string, v int64) attr     { return attr{key: k, kind: attrInt, n: v} }
func strs(k string, v []string) attr { return attr{key: k, kind: attrStrings, ss: v} }
func newSpanID() (id [8]byte)        { binary.LittleEndian.PutUint64(id[:], rand.Uint64()|1); return id }
func newTraceID() (id [16]byte) {
	binary.LittleEndian.PutUint64(id[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(id[8:], rand.Uint64()|1)
	return id
}

// CallInfo names a call.
type CallInfo struct {
	SessionID, MessageID, CallID, Tool, Agent string
}

// Call is one call's trace. A nil *Call records nothing. Decision and End may be called from
// several goroutines.
type Call struct {
	e     *Exporter
	trace [16]byte
	id    [8]byte
	start time.Time
	attrs []attr // the call span's attributes at its start
}

// StartCall starts the trace of a call that started at at, and exports its start at once.
func (e *Exporter) StartCall(c CallInfo, at time.Time) *Call {
	if e == nil {
		return nil
	}
	attrs := make([]attr, 0, 8)
	attrs = append(attrs, str(AttrWorkspace, e.workspace), str(AttrSession, c.SessionID), str(AttrMessage, c.MessageID),
		str(AttrCall, c.CallID), str(AttrTool, c.Tool))
	if c.Agent != "" {
		attrs = append(attrs, str(AttrAgent, c.Agent))
	}
	call := &Call{e: e, trace: newTraceID(), id: newSpanID(), start: at, attrs: attrs}
	e.enqueue(&span{name: "toolsd.call.start", trace: call.trace, id: newSpanID(), parent: call.id, start: at, end: at, attrs: attrs})
	return call
}

// Decision exports one permission decision of the call with its provenance.
func (c *Call) Decision(d protocol.Decision) {
	if c == nil {
		return
	}
	start := d.At
	if d.AskedAt != nil {
		start = *d.AskedAt
	}
	attrs := make([]attr, 0, 24)
	attrs = append(attrs,
		str(AttrPermission, d.Permission), strs(AttrPatterns, d.Patterns),
		str(AttrDecision, d.Action), str(AttrDecidedBy, d.By),
	)
	opt := func(k, v string) {
		if v != "" {
			attrs = append(attrs, str(k, v))
		}
	}
	if p := d.Provenance; p != nil {
		opt(AttrKind, p.Kind)
		opt(AttrText, p.Text)
		opt(AttrRule, p.Rule)
		opt(AttrLayer, p.Layer)
		opt(AttrFile, p.File)
		if p.Line > 0 {
			attrs = append(attrs, num(AttrLine, int64(p.Line)), num(AttrColumn, int64(p.Column)))
		}
		if p.RememberedAt != nil {
			opt(AttrRemembered, p.RememberedAt.UTC().Format(time.RFC3339))
		}
		opt(AttrRememberBy, p.RememberedBy)
		opt(AttrHook, p.Hook)
		opt(AttrReason, p.Reason)
		if len(p.Reasons) > 0 {
			attrs = append(attrs, strs(AttrReasons, p.Reasons))
		}
		opt(AttrUntrusted, p.Untrusted)
	}
	opt(AttrAnswer, d.Reply)
	opt(AttrScope, d.Scope)
	opt(AttrAnsweredBy, d.AnsweredBy)
	opt(AttrMessageText, d.Message)
	if d.AskedAt != nil {
		attrs = append(attrs, num(AttrWaitedMs, d.WaitedMs))
	}
	c.e.enqueue(&span{name: "toolsd.permission", trace: c.trace, id: newSpanID(), parent: c.id, start: start, end: d.At, attrs: attrs})
}

// End ends the call's trace: its final tool id, status and error.
func (c *Call) End(tool, status, errText string, at time.Time) {
	if c == nil {
		return
	}
	attrs := make([]attr, 0, len(c.attrs)+2)
	for _, a := range c.attrs {
		if a.key != AttrTool {
			attrs = append(attrs, a)
		}
	}
	attrs = append(attrs, str(AttrTool, tool), str(AttrStatus, status))
	if errText != "" {
		attrs = append(attrs, str(AttrError, errText))
	}
	failed := status == protocol.StatusError
	if !failed {
		errText = ""
	}
	c.e.enqueue(&span{name: "toolsd.call", trace: c.trace, id: c.id, start: c.start, end: at, attrs: attrs, failed: failed, errText: errText})
}
