// Package acp is `toolsd acp`: a proxy that is an ACP agent to the editor and an ACP client to the real agent it spawns, passing every message through in order and deciding the agent's session/request_permission by the workspace's rules through its daemon, adding `toolsd mcp` to every session's MCP servers and recording the agent's tool calls (docs/acp.md).
package acp
