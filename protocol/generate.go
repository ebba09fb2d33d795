package protocol

// editor-ext/src/protocol.ts is written from this package's types; internal/protogen's test
// fails when it is not current.
//go:generate go run ../internal/protogen -out ../editor-ext/src/protocol.ts
