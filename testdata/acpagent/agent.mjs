// An ACP agent on the official TypeScript SDK, for toolsd's Go end-to-end tests of
// `toolsd acp`. Its session/new answers with the MCP servers it was given (in _meta); a
// prompt whose text is a JSON list [{"id", "command"}] makes it ask permission for each
// shell command in turn, tell the outcome as a message chunk "outcome <id> <outcome>
// <optionId>", and, for an allowed one, report the tool call and its completion.
import { Readable, Writable } from "node:stream";
import { agent, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const options = [
  { optionId: "yes", name: "Allow", kind: "allow_once" },
  { optionId: "yes-always", name: "Always", kind: "allow_always" },
  { optionId: "no", name: "Reject", kind: "reject_once" },
  { optionId: "no-always", name: "Never", kind: "reject_always" },
];

const app = agent({ name: "toolsd-test-acpagent" })
  .onRequest(methods.agent.initialize, () => ({ protocolVersion: PROTOCOL_VERSION, agentCapabilities: { loadSession: false } }))
  .onRequest(methods.agent.session.new, ({ params }) => ({ sessionId: "ts-session", _meta: { mcpServers: params.mcpServers } }))
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    const text = params.prompt.map((b) => (b.type === "text" ? b.text : "")).join("");
    const say = (t) => client.notify(methods.client.session.update, {
      sessionId: params.sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } },
    });
    for (const step of JSON.parse(text)) {
      const toolCall = { toolCallId: step.id, title: step.command, kind: "execute", status: "pending", rawInput: { command: step.command } };
      const res = await client.request(methods.client.session.requestPermission, { sessionId: params.sessionId, toolCall, options });
      await say(`outcome ${step.id} ${res.outcome.outcome} ${res.outcome.optionId ?? ""}`);
      if (res.outcome.outcome === "selected" && res.outcome.optionId === "yes") {
        await client.notify(methods.client.session.update, { sessionId: params.sessionId, update: { sessionUpdate: "tool_call", ...toolCall, status: "in_progress" } });
        await client.notify(methods.client.session.update, {
          sessionId: params.sessionId,
          update: { sessionUpdate: "tool_call_update", toolCallId: step.id, status: "completed", content: [{ type: "content", content: { type: "text", text: `ran ${step.command}\n` } }] },
        });
      }
    }
    return { stopReason: "end_turn" };
  });

const conn = app.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await conn.closed;
