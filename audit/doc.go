// Package audit exports what toolsd decides and runs to a team's OpenTelemetry collector:
// every call's start and end, and every permission decision with its provenance, as spans
// over OTLP.
//
// # Promise
//
//   - Off unless turned on, and turned on the standard way: OTEL_TRACES_EXPORTER=otlp, with
//     OTEL_EXPORTER_OTLP_ENDPOINT, _PROTOCOL ("grpc" or "http/protobuf", the default),
//     _HEADERS, _TIMEOUT, _COMPRESSION, _INSECURE, _CERTIFICATE, _CLIENT_CERTIFICATE and
//     _CLIENT_KEY (each also as OTEL_EXPORTER_OTLP_TRACES_…, which wins), OTEL_SERVICE_NAME
//     and OTEL_RESOURCE_ATTRIBUTES, as the specification defines them; so a team's existing
//     environment needs no toolsd-specific setting. OTEL_SDK_DISABLED=true turns it off. The
//     setting audit.otlpEndpoint (user or editor settings, never a workspace's) turns it on
//     too.
//   - The spans, their batching and their export are toolsd's own (audit.go, otlp.go), not
//     OpenTelemetry's SDK and exporters, which would link the SDK and gRPC's runtime into
//     every start of the toolsd binary for a feature that is usually off; the request is
//     OTLP's official protobuf message (otlpproto.go). The tests hold them to the official
//     code: the same spans made by the SDK and encoded by the official exporter give the
//     same request, and internal/otlptest receives them with the official gRPC server and
//     protobuf decoder.
//   - Never in a call's way: spans are handed to a bounded queue (OTEL_BSP_MAX_QUEUE_SIZE,
//     default 2048) and exported in batches in the background, as OpenTelemetry's batch
//     span processor does it (OTEL_BSP_MAX_EXPORT_BATCH_SIZE, _SCHEDULE_DELAY and
//     _EXPORT_TIMEOUT too). When the queue is full — the collector is down or slow — a span
//     is dropped, not waited for, and counted; spans the collector refused or never got are
//     counted too. Status reports both, and the daemon shows them as a diagnostic.
//   - Flushed on shutdown, within a bounded time (Close).
//
// # What is exported
//
// One trace per call: the span "toolsd.call" from its start to its end (the tool, session,
// message and call ids, the agent, the status and error); a span "toolsd.call.start" of no
// length at the start, exported at once, so a call that never ends is still on record; and
// for each permission decision a span "toolsd.permission" from when it was asked to when it
// was decided, with the decision and its provenance: the rule as config writes it, its
// layer, file, line and column, a remembered answer's time and client, the shell
// analysis's reasons, the person's answer, through which client, and how long the ask
// waited. Attribute names are under "toolsd." (see the constants).
package audit
