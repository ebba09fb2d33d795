// A line-driven MCP client for toolsd's Go end-to-end tests: the official MCP TypeScript SDK
// spawns `toolsd mcp` (TOOLSD_BIN, with the arguments given to this script) and connects
// over stdio, as VS Code's agent or any other MCP host does.
//
// Commands arrive on stdin, one JSON object a line; each answer is one JSON line on stdout:
//   {"id": 1, "op": "list"}                              -> {"id": 1, "tools": [...]}
//   {"id": 2, "op": "call", "tool": "bash", "args": {}}  -> {"id": 2, "result": {...}}
//   {"id": 3, "op": "close"}                             -> {"id": 3, "closed": true}, then exit
// Errors answer {"id": N, "error": "..."}. Elicitations (asks that come back to this client)
// are answered by ELICIT: "once" (accept, allow once), "reject", or unset (the client does
// not declare elicitation at all); each is reported as {"elicit": {...}}.
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const out = (v) => process.stdout.write(JSON.stringify(v) + '\n');
const elicit = process.env.ELICIT ?? '';

const client = new Client(
  { name: process.env.CLIENT_NAME ?? 'node-agent', version: '1.2.3' },
  { capabilities: elicit ? { elicitation: { form: {} } } : {} },
);
if (elicit) {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    out({ elicit: req.params });
    if (elicit === 'once') return { action: 'accept', content: { answer: 'once' } };
    return { action: 'decline' };
  });
}
const transport = new StdioClientTransport({
  command: process.env.TOOLSD_BIN,
  args: process.argv.slice(2),
  env: process.env,
  stderr: 'inherit',
});
transport.onclose = () => out({ event: 'closed' });

try {
  await client.connect(transport);
  out({ ready: true, server: client.getServerVersion(), protocol: transport.protocolVersion ?? null });
} catch (e) {
  out({ ready: false, error: String(e?.message ?? e) });
  process.exit(1);
}

const rl = createInterface({ input: process.stdin });
rl.on('line', async (line) => {
  let cmd;
  try { cmd = JSON.parse(line); } catch { return; }
  try {
    switch (cmd.op) {
      case 'list': {
        const r = await client.listTools();
        out({ id: cmd.id, tools: r.tools });
        break;
      }
      case 'call': {
        const r = await client.callTool({ name: cmd.tool, arguments: cmd.args ?? {} }, undefined, { timeout: 120000 });
        out({ id: cmd.id, result: r });
        break;
      }
      case 'close':
        await client.close();
        out({ id: cmd.id, closed: true });
        process.exit(0);
        break;
      default:
        out({ id: cmd.id, error: 'unknown op ' + cmd.op });
    }
  } catch (e) {
    out({ id: cmd.id, error: String(e?.message ?? e) });
  }
});
rl.on('close', async () => { await client.close().catch(() => {}); process.exit(0); });
