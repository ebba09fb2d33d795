// An ACP agent on the official TypeScript SDK, for toolsd's Go end-to-end tests of
// `toolsd acp`. Its initialize answers with the client capabilities it was offered (in
// _meta), its session/new with the MCP servers it was given (in _meta). A prompt whose text
// is a JSON list of steps runs them in turn:
//   {"id", "command"}: ask permission for the shell command, tell the outcome as a message
//     chunk "outcome <id> <outcome> <optionId>", and, for an allowed one, report the tool
//     call and its completion;
//   {"id", "read", "line"?, "limit"?}: fs/read_text_file;
//   {"id", "write", "content", "ask"?}: fs/write_text_file (after asking permission for the
//     edit with "ask");
//   {"id", "run", "args"?, "cwd"?, "limit"?, "kill"?}: terminal/create, kill with "kill",
//     wait_for_exit, output, release, and output again; with "poll": terminal/output
//     first, every 20 ms until its output contains the "poll" text or it tells an exit
//     status (for at most 15 s), told as "polled"; then with "release" only release it, with
//     "leave" leave it running; with "embed": a tool call "<id>" whose content embeds the
//     terminal, reported in_progress after the poll and completed at its end;
// each of the last three told as a message chunk "result <id> <JSON of the answers>".
import { Readable, Writable } from "node:stream";
import { agent, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const options = [
  { optionId: "yes", name: "Allow", kind: "allow_once" },
  { optionId: "yes-always", name: "Always", kind: "allow_always" },
  { optionId: "no", name: "Reject", kind: "reject_once" },
  { optionId: "no-always", name: "Never", kind: "reject_always" },
];

const app = agent({ name: "toolsd-test-acpagent" })
  .onRequest(methods.agent.initialize, ({ params }) => ({ protocolVersion: PROTOCOL_VERSION, agentCapabilities: { loadSession: false },
    _meta: { clientCapabilities: params.clientCapabilities } }))
  .onRequest(methods.agent.session.new, ({ params }) => ({ sessionId: "ts-session", _meta: { mcpServers: params.mcpServers } }))
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    const text = params.prompt.map((b) => (b.type === "text" ? b.text : "")).join("");
    const say = (t) => client.notify(methods.client.session.update, {
      sessionId: params.sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } },
    });
    const report = (id, v) => say(`result ${id} ${JSON.stringify(v)}`);
    const call = async (method, p) => {
      try {
        return await client.request(method, { sessionId: params.sessionId, ...p });
      } catch (e) {
        return { error: String(e?.message ?? e), code: e?.code ?? null };
      }
    };
    const embed = (toolCallId, terminalId, status) => client.notify(methods.client.session.update, {
      sessionId: params.sessionId,
      update: { sessionUpdate: status === "in_progress" ? "tool_call" : "tool_call_update", toolCallId, title: "Run it", kind: "execute", status,
        content: [{ type: "terminal", terminalId }] },
    });
    const ask = (toolCall) => client.request(methods.client.session.requestPermission, { sessionId: params.sessionId, toolCall, options });
    for (const step of JSON.parse(text)) {
      if (step.read !== undefined) {
        await report(step.id, await call(methods.client.fs.readTextFile, { path: step.read, line: step.line ?? null, limit: step.limit ?? null }));
        continue;
      }
      if (step.write !== undefined) {
        if (step.ask) {
          const res = await ask({ toolCallId: step.id, title: `Write ${step.write}`, kind: "edit", status: "pending",
            rawInput: { file_path: step.write, content: step.content }, locations: [{ path: step.write }] });
          if (res.outcome.outcome !== "selected" || res.outcome.optionId !== "yes") {
            await report(step.id, { refused: res.outcome });
            continue;
          }
        }
        await report(step.id, await call(methods.client.fs.writeTextFile, { path: step.write, content: step.content }));
        continue;
      }
      if (step.run !== undefined) {
        const t = await call(methods.client.terminal.create, { command: step.run, args: step.args ?? [], cwd: step.cwd ?? null, outputByteLimit: step.limit ?? null });
        if (t.error) {
          await report(step.id, t);
          continue;
        }
        let polled = null;
        if (step.poll !== undefined) {
          const deadline = Date.now() + 15000;
          for (;;) {
            polled = await call(methods.client.terminal.output, { terminalId: t.terminalId });
            if (polled.error || polled.exitStatus || polled.output.includes(step.poll) || Date.now() > deadline) break;
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
          if (step.embed) await embed(step.id, t.terminalId, "in_progress");
          if (step.leave) {
            await report(step.id, { polled });
            continue;
          }
          if (step.release) {
            const released = await call(methods.client.terminal.release, { terminalId: t.terminalId });
            const after = await call(methods.client.terminal.output, { terminalId: t.terminalId });
            if (step.embed) await embed(step.id, t.terminalId, "completed");
            await report(step.id, { polled, released, after });
            continue;
          }
        }
        const early = step.kill ? await call(methods.client.terminal.kill, { terminalId: t.terminalId }) : null;
        const exit = await call(methods.client.terminal.waitForExit, { terminalId: t.terminalId });
        const out = await call(methods.client.terminal.output, { terminalId: t.terminalId });
        if (step.embed) await embed(step.id, t.terminalId, "completed");
        const released = await call(methods.client.terminal.release, { terminalId: t.terminalId });
        const after = await call(methods.client.terminal.output, { terminalId: t.terminalId });
        await report(step.id, { polled, exit, out, killed: early, released, after });
        continue;
      }
      const toolCall = { toolCallId: step.id, title: step.command, kind: "execute", status: "pending", rawInput: { command: step.command } };
      const res = await ask(toolCall);
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
