package attach

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Protocols a client may speak after the hello.
const (
	ProtoToolsd = "toolsd" // JSON-RPC 2.0 with LSP framing (docs/protocol.md)
	ProtoMCP    = "mcp"    // MCP over newline-delimited JSON (docs/mcp.md)
)

// maxLine bounds the hello and welcome lines.
const maxLine = 4096

// Hello is the line (JSON, then "\n") a client sends first on the socket; the bytes after it
// are the protocol's.
type Hello struct {
	Proto string `json:"proto"`
	PID   int    `json:"pid"`
	// Agent is toolsd mcp's --agent: whose rules and tool switches apply to its calls.
	Agent string `json:"agent,omitempty"`
	// Route is the ask route of `toolsd acp` and of the `toolsd mcp` it adds to an agent's
	// session (session.ClientOptions.Route): their asks go to that ACP editor alone.
	Route string `json:"route,omitempty"`
	// Flags are the client's flags that shape an owner (store, retention, sync, message
	// limit, log file); an owner started with others logs a warning.
	Flags map[string]string `json:"flags,omitempty"`
	// Streams: the hello came with two file descriptors (SCM_RIGHTS), the client's standard
	// input and output, and the owner serves the protocol on them; the socket then only
	// tells each side that the other is alive, and carries the session's end (an End line).
	// Without them (and without Relay) the protocol runs on the socket itself.
	Streams bool `json:"streams,omitempty"`
	// Relay: the client copies its standard streams over the socket itself, in frames
	// (relay.go), where they cannot be handed over (Windows); the owner ends the session
	// with an end frame carrying the End line.
	Relay bool `json:"relay,omitempty"`
	// Prefix is how many bytes of the client's input follow the hello on the socket: what a
	// forwarder read before it knew where to attach (the initialize frame).
	Prefix int `json:"prefix,omitempty"`
}

// End is the line an owner sends on the socket when it has finished serving a client's
// streams (handed over or relayed): the exit code the client process should exit with (as
// a standalone daemon would). A client whose socket ends without it lost its owner.
type End struct {
	Exit int `json:"exit"`
}

// Welcome is the owner's answer line; then the protocol's bytes follow.
type Welcome struct {
	PID     int    `json:"pid,omitempty"`
	Version string `json:"version,omitempty"`
	// Log is where the owner logs.
	Log string `json:"log,omitempty"`
	// Error refuses the client (the owner is exiting, a bad hello); the client may retry.
	Error string `json:"error,omitempty"`
}

// readLine reads one JSON line of at most maxLine bytes into v.
func readLine(r *bufio.Reader, v any) error {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return fmt.Errorf("attach: the first line is longer than %d bytes: not a toolsd client", maxLine)
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("attach: the first line is not a toolsd hello (%v)", err)
	}
	return nil
}

func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
