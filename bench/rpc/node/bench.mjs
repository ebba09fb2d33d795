// Node drivers for toolsd's benchmarks (see bench/README.md).
//
// - toolsd and the echo floor, driven by vscode-jsonrpc: the client an editor extension uses.
// - @modelcontextprotocol/server-filesystem, driven by the official MCP TypeScript client
//   (Client + StdioClientTransport), reading the same file with read_text_file.
//
// Each measurement is printed and appended to --out as one JSON line with the same fields
// as the Go driver's (bench/rpc/bench_test.go), for bench/rpc/report to tabulate.
//
// Usage: node bench.mjs --toolsd BIN --echo BIN [--out FILE] [--spawns 30] [--calls 2000]
//                       [--concurrent-calls 20000] [--only spawn,read,concurrent]

import { spawn } from 'node:child_process';
import { appendFileSync, closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import * as rpc from 'vscode-jsonrpc/node';

const { values: opt } = parseArgs({
  options: {
    toolsd: { type: 'string' },
    echo: { type: 'string' },
    out: { type: 'string' },
    spawns: { type: 'string', default: '30' },
    calls: { type: 'string', default: '2000' },
    'concurrent-calls': { type: 'string', default: '20000' },
    callers: { type: 'string', default: '64' },
    warmup: { type: 'string', default: '200' },
    only: { type: 'string', default: 'spawn,read,concurrent' },
  },
});
if (!opt.toolsd || !opt.echo) {
  console.error('usage: node bench.mjs --toolsd BIN --echo BIN [--out FILE] [--spawns N] [--calls N] [--concurrent-calls N] [--only spawn,read,concurrent]');
  process.exit(2);
}
const SPAWNS = Number(opt.spawns);
const CALLS = Number(opt.calls);
const CONC_CALLS = Number(opt['concurrent-calls']);
const CALLERS = Number(opt.callers);
const WARMUP = Number(opt.warmup);
const only = new Set(opt.only.split(','));

// The server's entry point, spawned with this node as an editor's MCP config would
// ("command": "node", "args": [".../dist/index.js", folder]); npx would add its own start-up.
const require = createRequire(import.meta.url);
const fsServer = join(require.resolve('@modelcontextprotocol/server-filesystem/package.json'), '..', 'dist', 'index.js');

const scratch = mkdtempSync(join(tmpdir(), 'toolsd-bench-node-'));
let keepScratch = false;
process.on('exit', () => keepScratch || rmSync(scratch, { recursive: true, force: true }));
let scratchN = 0;
const freshDir = (name) => mkdtempSync(join(scratch, `${name}-${scratchN++}-`));

// workspace makes a folder with the 1 KiB file (16 lines of 63 characters and a newline).
function workspace() {
  const ws = freshDir('ws');
  let text = '';
  for (let i = 1; i <= 16; i++) {
    const head = `line ${String(i).padStart(2, '0')} of the one-KiB file read by toolsd's benchmarks: `;
    text += (head + 'x'.repeat(63)).slice(0, 63) + '\n';
  }
  if (Buffer.byteLength(text) !== 1024) throw new Error(`fixture is ${text.length} bytes`);
  const file = join(ws, 'one-kib.txt');
  writeFileSync(file, text);
  return { ws, file };
}

// deadline fails a request that has no answer after 30 s, instead of hanging the run. For a
// Go server, dump() sends SIGQUIT so its goroutines are written to its log; the error names
// the request and the log, which is kept.
function deadline(promise, what, logPath, dump) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(async () => {
      if (dump) await dump();
      keepScratch = true;
      let head = '';
      try {
        head = readFileSync(logPath, 'utf8').split('\n').slice(0, 60).join('\n');
      } catch {}
      reject(new Error(`${what}: no answer after 30 s${logPath ? `; the server's log, kept at ${logPath}, begins:\n${head}` : ''}`));
    }, 30_000);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

const now = () => process.hrtime.bigint();
const usSince = (t0) => Number(now() - t0) / 1e3;

function summary(lat) {
  const s = Float64Array.from(lat).sort();
  const pct = (p) => s[Math.max(Math.ceil((s.length * p) / 100) - 1, 0)];
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return { n: s.length, p50_us: pct(50), p99_us: pct(99), mean_us: mean };
}

// cpuNow is what a process has used of the CPU so far, in µs, read two ways (as in the Go
// harness's bench_test.go): ticks from /proc/<pid>/stat, every thread the process ever had
// in clock ticks of 10 ms; run, the sum of its threads' run time from
// /proc/<pid>/task/*/schedstat, precise but missing the threads that have exited.
function cpuNow(pid) {
  const u = { ticks: NaN, run: 0 };
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    u.ticks = (Number(f[11]) + Number(f[12])) * 10_000;
  } catch {
    return u;
  }
  let tasks = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {}
  for (const t of tasks) {
    try {
      u.run += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]) / 1e3;
    } catch {} // the thread has exited
  }
  return u;
}

// cpuSince is the CPU time in µs the process has used since u0: the threads' run time,
// unless that fell more than the ticks' rounding short of the ticks (a thread exited
// meanwhile, or there is no schedstat), when the ticks are all there is.
function cpuSince(pid, u0) {
  const u = cpuNow(pid);
  const run = u.run - u0.run;
  const ticks = u.ticks - u0.ticks;
  return !(u0.run > 0) || run < ticks - 30_000 ? ticks : run;
}

function emit(rec) {
  const line = JSON.stringify(rec);
  console.log(line);
  if (opt.out) appendFileSync(opt.out, line + '\n');
}

// --- vscode-jsonrpc targets: toolsd and the echo -------------------------------------

// startLSP spawns a server speaking LSP framing and connects vscode-jsonrpc to it. toolsd
// gets its store and a config folder under state (a fresh folder if not given), apart as on
// any real machine: the daemon watches its config folder, and one that held the store (or
// the log below) would wake it at every write.
function startLSP(kind, state = freshDir('state')) {
  const args = kind === 'toolsd' ? ['--store', join(state, 'store.db'), ...(process.env.TOOLSD_ARGS || '').split(' ').filter(Boolean)] : [];
  const log = join(state, `${kind}.log`);
  const config = join(state, 'config');
  mkdirSync(config, { recursive: true });
  const stderr = openSync(log, 'a'); // as an editor keeps a log
  const child = spawn(kind === 'toolsd' ? opt.toolsd : opt.echo, args, {
    stdio: ['pipe', 'pipe', stderr],
    env: { ...process.env, XDG_CONFIG_HOME: config, XDG_STATE_HOME: state },
  });
  closeSync(stderr);
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  const conn = rpc.createMessageConnection(new rpc.StreamMessageReader(child.stdout), new rpc.StreamMessageWriter(child.stdin));
  const notes = { n: 0 };
  conn.onNotification(() => notes.n++); // tools/progress and friends: counted, not timed
  conn.listen();
  const dump = () => {
    child.kill('SIGQUIT');
    return Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
  };
  const request = (method, params) => deadline(conn.sendRequest(method, params), method, log, dump);
  return { child, conn, exited, state, log, request, notes };
}

async function initialize(s, ws) {
  return s.request('initialize', {
    processId: process.pid,
    clientInfo: { name: 'bench-node', version: '1' },
    workspaceFolder: ws,
    capabilities: { ask: true, progress: true },
  });
}

async function stopLSP(s) {
  await s.request('shutdown');
  await s.conn.sendNotification('exit');
  const code = await deadline(s.exited, 'exit', s.log);
  s.conn.dispose();
  if (code !== 0) throw new Error(`exit code ${code}`);
}

// readCaller makes tools/execute read calls with fresh callIDs. Every call's args carry a
// distinct limit (at least 2000 lines, so the whole 16-line file is read either way): toolsd
// asks under doom_loop when a session makes the same call three times in a row, and an agent
// stuck in a loop is not what these benchmarks measure.
function readCaller(s, file) {
  let n = 0;
  return async () => {
    n++;
    const res = await s.request('tools/execute', {
      sessionID: 'bench', messageID: 'm1', callID: `call-${n}`, tool: 'read', args: { filePath: file, limit: 2000 + n },
    });
    if (res.status !== 'completed') throw new Error(`read: status ${res.status}: ${res.error}`);
    return res;
  };
}

let sample; // toolsd's result for a read of the fixture, for the echo to answer with

async function readyLSP(kind) {
  const { ws, file } = workspace();
  const s = startLSP(kind);
  await initialize(s, ws);
  s.conn.sendNotification('initialized', {});
  if (kind === 'echo') {
    if (!sample) {
      const t = await readyLSP('toolsd');
      await stopLSP(t.s);
    }
    await s.request('bench/setResult', sample);
  }
  const call = readCaller(s, file);
  const first = await call();
  if (kind === 'toolsd') sample = first;
  const size = Buffer.byteLength(JSON.stringify(first));
  for (let i = 0; i < WARMUP; i++) await call();
  return { s, call, size, notes: () => s.notes.n, pid: s.child.pid };
}

// --- MCP target: server-filesystem through the official client -----------------------

async function startMCP(ws) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [fsServer, ws], stderr: 'ignore' });
  const client = new Client({ name: 'bench-node', version: '1' });
  await deadline(client.connect(transport), 'MCP connect'); // spawn, initialize, initialized
  client.pid = transport.pid;
  return client;
}

function mcpReader(client, file) {
  return async () => {
    const res = await deadline(client.callTool({ name: 'read_text_file', arguments: { path: file } }), 'tools/call read_text_file');
    if (res.isError) throw new Error(`read_text_file: ${JSON.stringify(res.content)}`);
    return res;
  };
}

async function readyMCP() {
  const { ws, file } = workspace();
  const client = await startMCP(ws);
  const call = mcpReader(client, file);
  const first = await call();
  const size = Buffer.byteLength(JSON.stringify(first));
  for (let i = 0; i < WARMUP; i++) await call();
  return { client, call, size, pid: client.pid };
}

// --- the benchmarks ------------------------------------------------------------------

const targets = [
  { server: 'toolsd', client: 'node-vscode-jsonrpc', ready: () => readyLSP('toolsd'), stop: (r) => stopLSP(r.s) },
  { server: 'echo', client: 'node-vscode-jsonrpc', ready: () => readyLSP('echo'), stop: (r) => stopLSP(r.s) },
  { server: 'server-filesystem', client: 'mcp-ts-client', ready: readyMCP, stop: (r) => r.client.close() },
];

async function benchSpawn() {
  const spawners = {
    toolsd: async (ws, state) => {
      const t0 = now();
      const s = startLSP('toolsd', state);
      await initialize(s, ws);
      const us = usSince(t0);
      s.conn.sendNotification('initialized', {});
      await stopLSP(s);
      return us;
    },
    echo: async (ws) => {
      const t0 = now();
      const s = startLSP('echo');
      await initialize(s, ws);
      const us = usSince(t0);
      await stopLSP(s);
      return us;
    },
    'server-filesystem': async (ws) => {
      const t0 = now();
      const client = await startMCP(ws);
      const us = usSince(t0);
      await client.close();
      return us;
    },
  };
  for (const t of targets) {
    const { ws } = workspace();
    const state = freshDir('state');
    const spawnOnce = spawners[t.server];
    // toolsd keeps one store across spawns, as for an editor reopening a workspace.
    await spawnOnce(ws, state); // warms the page cache (and, for toolsd, creates the store)
    const lat = [];
    for (let i = 0; i < SPAWNS; i++) lat.push(await spawnOnce(ws, state));
    emit({ bench: 'spawn', client: t.client, server: t.server, ...summary(lat) });
  }
  // toolsd on a workspace it has never seen: the store file is created during initialize.
  const lat = [];
  for (let i = 0; i < SPAWNS; i++) lat.push(await spawners.toolsd(workspace().ws, freshDir('state')));
  emit({ bench: 'spawn-new-store', client: 'node-vscode-jsonrpc', server: 'toolsd', ...summary(lat) });
}

async function benchRead() {
  for (const t of targets) {
    const r = await t.ready();
    const notes0 = r.notes?.() ?? 0;
    const lat = new Array(CALLS);
    for (let i = 0; i < CALLS; i++) {
      const t0 = now();
      await r.call();
      lat[i] = usSince(t0);
    }
    const notes = ((r.notes?.() ?? 0) - notes0) / CALLS;
    await t.stop(r);
    emit({ bench: 'read', client: t.client, server: t.server, resp_bytes: r.size, notifications_per_call: notes, ...summary(lat) });
  }
}

async function benchConcurrent() {
  for (const t of targets) {
    const r = await t.ready();
    let started = 0;
    const worker = async () => {
      while (started < CONC_CALLS) {
        started++;
        await r.call();
      }
    };
    const cpu0 = r.pid ? cpuNow(r.pid) : undefined;
    const t0 = now();
    await Promise.all(Array.from({ length: CALLERS }, worker));
    const secs = Number(now() - t0) / 1e9;
    const cpu = r.pid ? cpuSince(r.pid, cpu0) / CONC_CALLS : undefined;
    await t.stop(r);
    emit({ bench: 'concurrent', client: t.client, server: t.server, n: CONC_CALLS, callers: CALLERS, calls_per_s: CONC_CALLS / secs, resp_bytes: r.size, server_cpu_us_per_call: cpu });
  }
}

if (only.has('spawn')) await benchSpawn();
if (only.has('read')) await benchRead();
if (only.has('concurrent')) await benchConcurrent();
