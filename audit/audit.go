package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

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
	// Getenv reads the environment (every OTEL_ setting); nil means os.Getenv. Only
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are read from the process's
	// environment whatever Getenv is, by the SDK's resource.
	Getenv func(string) string
}

// Exporter sends spans to a collector. A nil *Exporter exports nothing: every method is safe
// to call on it. Safe for concurrent use.
type Exporter struct {
	tp        *sdktrace.TracerProvider
	tracer    trace.Tracer
	workspace string
	endpoint  string
	protocol  string
	log       *slog.Logger

	inFlight atomic.Int64 // handed to the batch processor, not yet exported or failed
	max      int64
	exported atomic.Int64
	dropped  atomic.Int64
	failed   atomic.Int64
	lastWarn atomic.Int64 // unix nanos of the last warning about lost spans

	errMu   sync.Mutex // guards lastErr
	lastErr string

	// exports is cancelled when Close runs out of time: an export blocked on a collector
	// that is down returns at once, so that nothing is left running.
	exports      context.Context
	stopExports  context.CancelFunc
	exporterDone chan struct{} // closed when the exporter has shut down
	closeOnce    sync.Once
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
	exporter := newOTLPExporter(cfg, o.Version)
	// The collector as people name it: gRPC's method path is not theirs.
	endpoint := strings.TrimSuffix(cfg.url, grpcExportPath)
	e := &Exporter{workspace: o.Workspace, endpoint: endpoint, protocol: proto, log: o.Logger.With("component", "audit"), max: DefaultQueueSize, exporterDone: make(chan struct{})}
	e.exports, e.stopExports = context.WithCancel(context.Background())
	if n, err := strconv.Atoi(strings.TrimSpace(getenv("OTEL_BSP_MAX_QUEUE_SIZE"))); err == nil && n > 0 {
		e.max = int64(n)
	}
	res, err := resource.Merge(resource.NewSchemaless(
		attribute.String("service.name", "toolsd"),
		attribute.String("service.version", o.Version),
	), resource.Environment())
	if err != nil {
		res = resource.NewSchemaless(attribute.String("service.name", "toolsd"))
	}
	bsp := sdktrace.NewBatchSpanProcessor(&countingExporter{e: e, next: exporter}, sdktrace.WithMaxQueueSize(int(e.max)))
	e.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(&boundedProcessor{e: e, next: bsp}), sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.AlwaysSample()))
	e.tracer = e.tp.Tracer("github.com/toolsd/toolsd/audit")
	e.log.Info("audit export on", "endpoint", endpoint, "protocol", proto, "queue", e.max)
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
	var err error
	e.closeOnce.Do(func() {
		err = e.tp.Shutdown(ctx)
		// Out of time (or done): cut short what is still being sent, and wait for the
		// exporter, which now returns at once.
		e.stopExports()
		<-e.exporterDone
		if n := e.inFlight.Swap(0); n > 0 {
			e.dropped.Add(n)
		}
		s := e.Status()
		e.log.Info("audit export stopped", "exported", s.Exported, "dropped", s.Dropped, "failed", s.Failed)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			err = nil // the spans left were counted
		}
	})
	return err
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

// boundedProcessor hands spans to the batch processor while fewer than max wait, and drops
// (and counts) the others: the batch processor's own drops are not observable.
type boundedProcessor struct {
	e    *Exporter
	next sdktrace.SpanProcessor
}

func (p *boundedProcessor) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {}

func (p *boundedProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	if p.e.inFlight.Add(1) > p.e.max {
		p.e.inFlight.Add(-1)
		p.e.lost(1, &p.e.dropped, nil)
		return
	}
	p.next.OnEnd(s)
}

func (p *boundedProcessor) Shutdown(ctx context.Context) error   { return p.next.Shutdown(ctx) }
func (p *boundedProcessor) ForceFlush(ctx context.Context) error { return p.next.ForceFlush(ctx) }

// countingExporter counts what the collector took and what it did not.
type countingExporter struct {
	e    *Exporter
	next sdktrace.SpanExporter
}

func (c *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.e.exports, cancel)()
	err := c.next.ExportSpans(ctx, spans)
	n := int64(len(spans))
	c.e.inFlight.Add(-n)
	if err != nil {
		c.e.lost(n, &c.e.failed, err)
	} else {
		c.e.exported.Add(n)
	}
	return err
}

func (c *countingExporter) Shutdown(ctx context.Context) error {
	defer close(c.e.exporterDone)
	if c.e.exports.Err() != nil {
		// Close ran out of time: do not wait for the collector either.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		cancel()
	}
	return c.next.Shutdown(ctx)
}

// CallInfo names a call.
type CallInfo struct {
	SessionID, MessageID, CallID, Tool, Agent string
}

// Call is one call's trace. A nil *Call records nothing. Its methods may be called from
// several goroutines.
type Call struct {
	e    *Exporter
	ctx  context.Context
	span trace.Span
}

// StartCall starts the trace of a call that started at at, and exports its start at once.
func (e *Exporter) StartCall(c CallInfo, at time.Time) *Call {
	if e == nil {
		return nil
	}
	attrs := []attribute.KeyValue{
		attribute.String(AttrWorkspace, e.workspace), attribute.String(AttrSession, c.SessionID), attribute.String(AttrMessage, c.MessageID),
		attribute.String(AttrCall, c.CallID), attribute.String(AttrTool, c.Tool),
	}
	if c.Agent != "" {
		attrs = append(attrs, attribute.String(AttrAgent, c.Agent))
	}
	ctx, span := e.tracer.Start(context.Background(), "toolsd.call", trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	_, start := e.tracer.Start(ctx, "toolsd.call.start", trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	start.End(trace.WithTimestamp(at))
	return &Call{e: e, ctx: ctx, span: span}
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
	attrs := make([]attribute.KeyValue, 0, 24)
	attrs = append(attrs,
		attribute.String(AttrPermission, d.Permission), attribute.StringSlice(AttrPatterns, d.Patterns),
		attribute.String(AttrDecision, d.Action), attribute.String(AttrDecidedBy, d.By),
	)
	str := func(k, v string) {
		if v != "" {
			attrs = append(attrs, attribute.String(k, v))
		}
	}
	if p := d.Provenance; p != nil {
		str(AttrKind, p.Kind)
		str(AttrText, p.Text)
		str(AttrRule, p.Rule)
		str(AttrLayer, p.Layer)
		str(AttrFile, p.File)
		if p.Line > 0 {
			attrs = append(attrs, attribute.Int(AttrLine, p.Line), attribute.Int(AttrColumn, p.Column))
		}
		if p.RememberedAt != nil {
			str(AttrRemembered, p.RememberedAt.UTC().Format(time.RFC3339))
		}
		str(AttrRememberBy, p.RememberedBy)
		str(AttrHook, p.Hook)
		str(AttrReason, p.Reason)
		if len(p.Reasons) > 0 {
			attrs = append(attrs, attribute.StringSlice(AttrReasons, p.Reasons))
		}
		str(AttrUntrusted, p.Untrusted)
	}
	str(AttrAnswer, d.Reply)
	str(AttrScope, d.Scope)
	str(AttrAnsweredBy, d.AnsweredBy)
	str(AttrMessageText, d.Message)
	if d.AskedAt != nil {
		attrs = append(attrs, attribute.Int64(AttrWaitedMs, d.WaitedMs))
	}
	_, span := c.e.tracer.Start(c.ctx, "toolsd.permission", trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(d.At))
}

// End ends the call's trace: its final tool id, status and error.
func (c *Call) End(tool, status, errText string, at time.Time) {
	if c == nil {
		return
	}
	c.span.SetAttributes(attribute.String(AttrTool, tool), attribute.String(AttrStatus, status))
	if errText != "" {
		c.span.SetAttributes(attribute.String(AttrError, errText))
	}
	if status == protocol.StatusError {
		c.span.SetStatus(codes.Error, errText)
	}
	c.span.End(trace.WithTimestamp(at))
}
