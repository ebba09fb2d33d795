package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

// maxID is providers' limit on a tool name (OpenAI, Anthropic: 64 characters).
const maxID = 64

// hashSuffix is a stable 8-hex-digit digest of the server and the tool's own name.
func hashSuffix(server, tool string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	return hex.EncodeToString(sum[:4])
}

// ToolID is the catalogue id of an MCP server's tool: "<server>_<tool>" with every character
// outside [A-Za-z0-9_-] replaced by '_', and, when that is longer than 64 characters, cut to
// 55 and ended with '_' and a stable 8-digit hash of the original names, so that long names
// never exceed the providers' limit and stay the same across restarts.
func ToolID(server, tool string) string {
	id := registry.SanitizeID(server) + "_" + registry.SanitizeID(tool)
	if len(id) <= maxID {
		return id
	}
	return hashed(server, tool)
}

func hashed(server, tool string) string {
	id := registry.SanitizeID(server) + "_" + registry.SanitizeID(tool)
	h := hashSuffix(server, tool)
	return id[:min(len(id), maxID-len(h)-1)] + "_" + h
}

// assignIDs gives each of a server's tool names its id. Names whose ids collide (two names
// that differ only in characters that sanitize to '_', say) are kept apart: the first name in
// sort order keeps the plain id and the others get the hashed form, with a warning; a name
// that still collides is left out with an error. It returns id by name.
func assignIDs(server string, names []string) (map[string]string, []protocol.Diagnostic) {
	sorted := append([]string{}, names...)
	sort.Strings(sorted)
	ids := map[string]string{}
	owner := map[string]string{} // id -> name
	var diags []protocol.Diagnostic
	for _, name := range sorted {
		id := ToolID(server, name)
		if prev, taken := owner[id]; taken {
			alt := hashed(server, name)
			if _, still := owner[alt]; still {
				diags = append(diags, protocol.Diagnostic{Path: SourcePrefix + server, Severity: "error",
					Message: fmt.Sprintf("MCP server %q: tool %q cannot be given a unique name (it collides with %q); it is left out", server, name, prev)})
				continue
			}
			diags = append(diags, protocol.Diagnostic{Path: SourcePrefix + server, Severity: "warning",
				Message: fmt.Sprintf("MCP server %q: tools %q and %q both map to %q; %q is offered as %q", server, prev, name, id, name, alt)})
			id = alt
		}
		owner[id] = name
		ids[name] = id
	}
	return ids, diags
}
