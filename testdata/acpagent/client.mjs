// An ACP client on the official TypeScript SDK, for toolsd's Go end-to-end tests of
// `toolsd acp`: the editor's side, an independent implementation that validates what toolsd
// sends it. It spawns TOOLSD_BIN with the arguments given to this script (`acp ... -- node
// agent.mjs`), initializes ACP v1, opens a session, sends the prompt STEPS (agent.mjs's
// steps), answers each session/request_permission with ANSWER_<toolCallId> (default "once";
// an option id of the request), and prints one JSON line: the requests it was asked (tool
// call id, title, option ids), the agent's "outcome" and "result" lines, and the stop reason.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const proc = spawn(process.env.TOOLSD_BIN, process.argv.slice(2), { stdio: ["pipe", "pipe", "inherit"] });
const asked = [];
const said = [];
const app = client({ name: "toolsd-test-acpclient" })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    const id = params.toolCall.toolCallId;
    asked.push({ id, title: params.toolCall.title ?? "", options: params.options.map((o) => o.optionId) });
    const answer = process.env[`ANSWER_${id}`] ?? "once";
    return { outcome: { outcome: "selected", optionId: answer } };
  })
  .onNotification(methods.client.session.update, ({ params }) => {
    const u = params.update;
    if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") said.push(u.content.text);
  });

const stream = ndJsonStream(Writable.toWeb(proc.stdin), Readable.toWeb(proc.stdout));
const out = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
  const session = await ctx.request(methods.agent.session.new, { cwd: process.env.WORKSPACE, mcpServers: [] });
  const res = await ctx.request(methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: process.env.STEPS }],
  });
  return { protocolVersion: init.protocolVersion, sessionId: session.sessionId, stopReason: res.stopReason, asked, said };
});
process.stdout.write(JSON.stringify(out) + "\n");
proc.stdin.end();
await new Promise((resolve) => proc.on("exit", resolve));
