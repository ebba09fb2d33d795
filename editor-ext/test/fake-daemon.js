#!/usr/bin/env node
// A small stand-in for toolsd over stdio (LSP framing, vscode-jsonrpc). Only for cases the real
// daemon cannot be made to produce on purpose; everything else is tested against the real binary.
// Behaviour switches (argv): --fail-initialize (initialize answers an error),
// --exit-before-initialize (exits with code 3 at once), --crash-on-initialized (exits with code 2 when the
// initialized notification arrives), --hang-on-shutdown (never answers shutdown and ignores the end of stdin).
'use strict';
const { createMessageConnection, StreamMessageReader, StreamMessageWriter, ResponseError } = require('vscode-jsonrpc/node');

const argv = process.argv.slice(2);
if (argv.includes('--exit-before-initialize')) process.exit(3);

const conn = createMessageConnection(new StreamMessageReader(process.stdin), new StreamMessageWriter(process.stdout));
let initialized = false;
let shutdown = false;
conn.onRequest('initialize', (params) => {
  if (argv.includes('--fail-initialize')) throw new ResponseError(-32602, 'workspaceFolder: fake refusal');
  initialized = true;
  process.stderr.write(`fake toolsd: initialize for ${params.workspaceFolder}\n`);
  return { serverInfo: { name: 'toolsd', version: 'fake' }, capabilities: { ask: true, progress: true }, storePath: '' };
});
conn.onNotification('initialized', () => { if (argv.includes('--crash-on-initialized')) process.exit(2); });
conn.onRequest('tools/resolve', () => ({
  tools: [{ id: 'bash', description: 'Run a command', inputSchema: { type: 'object' }, source: 'builtin' }],
  diagnostics: [],
}));
const hang = argv.includes('--hang-on-shutdown');
conn.onRequest('shutdown', () => { shutdown = true; return hang ? new Promise(() => {}) : null; });
conn.onNotification('exit', () => process.exit(shutdown ? 0 : 1));
conn.onRequest((method) => {
  if (!initialized) return new ResponseError(-32002, 'server not initialized');
  return new ResponseError(-32601, `fake toolsd does not implement ${method}`);
});
process.stdin.on('end', () => { if (!hang) process.exit(1); });
if (hang) setInterval(() => {}, 1 << 30); // stays alive until killed
conn.listen();
