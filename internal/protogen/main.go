// Command protogen writes editor-ext/src/protocol.ts, the extension's wire types, from the Go
// types of package protocol, so that the two cannot drift.
//
// It reads the package's source with go/ast. Every exported struct type becomes an interface
// (JSON tag names, omitempty or omitzero as an optional member, doc comments carried over), the
// Method* constants become the Methods object, the Code* constants the ErrorCodes object, the
// const blocks defaultConfig names string-literal unions, and every other constant an exported
// const. A Go type it has no TypeScript for is an error that names it: add a rule to tsType,
// never an any. Run it through go generate:
//
//	go generate ./protocol
//
// The test of this package fails when the checked-in protocol.ts is not what it writes.
//
// Package main is a code generator, not part of the daemon.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	dir := flag.String("dir", ".", "the folder of package protocol")
	out := flag.String("out", "../editor-ext/src/protocol.ts", "the TypeScript file to write")
	flag.Parse()
	src, err := generate(*dir, defaultConfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
}

// config is what the Go source does not say: which const blocks are closed sets of values with a
// TypeScript name, and the fields that hold one of them (or need a narrower type than their Go
// type gives).
type config struct {
	// unions maps a TypeScript union's name to a constant of the const block whose values it
	// holds; a constant added to that block joins the union.
	unions map[string]string
	// fields maps "GoType.GoField" to the TypeScript type of that member (a union's name or a
	// TypeScript type). Every entry must name a field that exists.
	fields map[string]string
}

const object = "Record<string, unknown> | null" // tool metadata: a JSON object, or null

var defaultConfig = config{
	unions: map[string]string{
		"CallStatus":     "StatusCompleted",
		"ClientKind":     "ClientEditor",
		"HookPoint":      "HookPointBefore",
		"HookFailure":    "HookFailOpen",
		"HookOutcome":    "HookOK",
		"ProvenanceKind": "ProvenanceRule",
		"Reply":          "ReplyOnce",
		"Scope":          "ScopeSession",
		"ChangeStatus":   "ChangeAdded",
		"RevertScope":    "RevertCall",
		"RevertStatus":   "RevertDone",
	},
	fields: map[string]string{
		"ExecuteResult.Status":       "CallStatus",
		"ProgressParams.Status":      "CallStatus",
		"CallSummary.Status":         "CallStatus",
		"CallRecord.Status":          "CallStatus",
		"HookCallResult.Status":      "CallStatus",
		"ClientRef.Kind":             "ClientKind",
		"HookSubscription.Point":     "HookPoint",
		"HookRun.Point":              "HookPoint",
		"HookParams.Point":           "HookPoint",
		"HookSubscription.OnFailure": "HookFailure",
		"HookRun.OnFailure":          "HookFailure",
		"HookRun.Outcome":            "HookOutcome",
		"Provenance.Kind":            "ProvenanceKind",
		"ReplyParams.Reply":          "Reply",
		"AnsweredParams.Reply":       "Reply",
		"Decision.Reply":             "Reply",
		"ReplyParams.Scope":          "Scope",
		"Decision.Scope":             "Scope",
		"FileChangeInfo.Status":      "ChangeStatus",
		"CallsRevertParams.Scope":    "RevertScope",
		"CallsRevertResult.Status":   "RevertStatus",
		"ExecuteResult.Metadata":     object,
		"ProgressParams.Metadata":    object,
		"AskedParams.Metadata":       object,
		"CallRecord.Metadata":        object,
		"HookCallResult.Metadata":    object,
		"HookResult.Metadata":        object,
	},
}
