// The client core against the real toolsd binary (built by scripts/test.sh): start, resolve, an
// ask answered once or rejected with a message, full outputs, crash → restart, and a refused
// initialize that is not retried.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DaemonClient, DaemonClientOptions, StartError } from '../src/client';
import { AnsweredParams, AskedParams, CallsChangesResult, CallsListResult, CallsRevertResult, ClientsParams, ExecuteResult, ListAsksResult, Methods, OutputsReadResult, ResolveResult } from '../src/protocol';
import { nextNotification, realDaemon, tempWorkspace, waitForState } from './helpers';

const clients: DaemonClient[] = [];
after(async () => { await Promise.all(clients.map((c) => c.dispose())); });

function realClient(extra: Partial<DaemonClientOptions> = {}): { client: DaemonClient; ws: string; log: string[] } {
  const ws = tempWorkspace();
  const log: string[] = [];
  const client = new DaemonClient({
    spawn: { command: realDaemon(), args: ['--store', path.join(ws, '..', path.basename(ws) + '.db')] },
    workspaceFolder: ws,
    clientInfo: { name: 'editor-ext unit tests' },
    restart: { backoffMs: 1, maxBackoffMs: 10 },
    log: (l) => log.push(l),
    ...extra,
    // These tests are about asks: commands run confined, but ask as without a sandbox.
    initializationOptions: { sandbox: { autoAllow: false }, ...(extra.initializationOptions as object ?? {}) },
  });
  clients.push(client);
  return { client, ws, log };
}

let n = 0;
function execute(client: DaemonClient, tool: string, args: unknown, sessionID = 's1'): Promise<ExecuteResult> {
  n++;
  return client.request<ExecuteResult>(Methods.toolsExecute, { sessionID, messageID: `m${n}`, callID: `c${n}`, tool, args });
}

test('start: initialize answers with the server info, and resolve lists the built-in tools', async () => {
  const { client } = realClient();
  const init = await client.start();
  assert.equal(init.serverInfo.name, 'toolsd');
  assert.equal(client.state, 'running');
  const r = await client.request<ResolveResult>(Methods.toolsResolve, { sessionID: 's1' });
  const ids = r.tools.map((t) => t.id);
  for (const id of ['bash', 'read']) assert.ok(ids.includes(id), `${id} in ${ids.join(',')}`);
  assert.ok(r.tools.every((t) => t.source === 'builtin' || t.source === 'project' || t.source.startsWith('mcp:')));
});

test('an execute of bash raises permission/asked; "once" lets it complete', async () => {
  const { client } = realClient();
  await client.start();
  const asked = nextNotification<AskedParams>(client, Methods.permissionAsked);
  const result = execute(client, 'bash', { command: 'echo toolsd-says-hi', description: 'greet' });
  const ask = await asked;
  assert.equal(ask.tool, 'bash');
  assert.deepEqual(ask.patterns, ['echo toolsd-says-hi']);
  assert.equal(ask.metadata?.command, 'echo toolsd-says-hi');
  const listed = await client.request<ListAsksResult>(Methods.permissionList, {});
  assert.deepEqual(listed.asks.map((a) => a.id), [ask.id], 'the pending ask is listed for a reloaded UI');
  await client.request(Methods.permissionReply, { id: ask.id, reply: 'once' });
  const r = await result;
  assert.equal(r.status, 'completed', JSON.stringify(r));
  assert.match(r.output, /toolsd-says-hi/);
  await assert.rejects(client.request(Methods.permissionReply, { id: ask.id, reply: 'once' }), 'an answered ask cannot be answered again');
  const calls = await client.request<CallsListResult>(Methods.callsList, {});
  assert.equal(calls.calls[0].status, 'completed');
});

test('a rejection with a message ends the call with an error that carries the message', async () => {
  const { client, ws } = realClient();
  await client.start();
  const asked = nextNotification<AskedParams>(client, Methods.permissionAsked);
  const result = execute(client, 'bash', { command: 'touch made-it', description: 'touch' });
  const ask = await asked;
  await client.request(Methods.permissionReply, { id: ask.id, reply: 'reject', message: 'use the write tool instead' });
  const r = await result;
  assert.equal(r.status, 'error');
  assert.match(r.error ?? '', /use the write tool instead/);
  assert.equal(fs.existsSync(path.join(ws, 'made-it')), false, 'the rejected command did not run');
});

test('a long output is truncated for the model and read back in full through outputs/read pages', async () => {
  const { client } = realClient();
  await client.start();
  const sub = client.onNotification<AskedParams>(Methods.permissionAsked, (a) => void client.request(Methods.permissionReply, { id: a.id, reply: 'once' }));
  const r = await execute(client, 'bash', { command: 'seq 1 30000', description: 'count' });
  sub.dispose();
  assert.equal(r.status, 'completed', JSON.stringify(r).slice(0, 500));
  assert.equal(r.truncated, true);
  assert.ok(r.outputID, 'a truncated result names its full output');
  const lines: string[] = [];
  for (let offset = 0; ;) {
    const page: OutputsReadResult = await client.request<OutputsReadResult>(Methods.outputsRead, { outputID: r.outputID, offset, limit: 7000 });
    assert.equal(page.totalLines, 30000);
    lines.push(...page.content.replace(/\n$/, '').split('\n'));
    offset += page.lines;
    if (offset >= page.totalLines || page.lines === 0) break;
  }
  assert.equal(lines.length, 30000);
  assert.equal(lines[0], '1');
  assert.equal(lines[29999], '30000');
});

test('a crash of a running daemon is followed by a restart that serves again', async () => {
  const { client, log } = realClient();
  await client.start();
  const first = client.pid!;
  const restarted = new Promise<void>((resolve) => client.onDidStart(() => resolve()));
  process.kill(first, 'SIGKILL');
  await waitForState(client, 'restarting');
  await restarted;
  assert.equal(client.state, 'running');
  assert.notEqual(client.pid, first);
  assert.equal(client.restarts, 1);
  assert.ok(log.some((l) => /exited unexpectedly \(signal SIGKILL\)/.test(l)), log.join('\n'));
  const r = await client.request<ResolveResult>(Methods.toolsResolve, { sessionID: 's1' });
  assert.ok(r.tools.length > 0);
});

test('a refused initialize leaves the client failed and is not retried', async () => {
  const { client, ws } = realClient({ workspaceFolder: 'not/absolute' });
  client.setOptions({ ...(client as any).options, spawn: { ...(client as any).options.spawn, cwd: ws } });
  const states: string[] = [];
  client.onDidChangeState((s) => states.push(s));
  await assert.rejects(client.start(), (e: Error) => e instanceof StartError && /refused initialize: .*absolute/.test(e.message));
  assert.deepEqual(states, ['starting', 'failed']);
  assert.equal(client.restarts, 0);
  assert.equal((client as any).restartTimer, undefined);
  await assert.rejects(client.request(Methods.toolsResolve, { sessionID: 's' }), /not running \(state: failed\)/);
});

test('stop ends the daemon through shutdown and exit', async () => {
  const { client, log } = realClient();
  await client.start();
  const pid = client.pid!;
  await client.stop();
  assert.equal(client.state, 'stopped');
  assert.throws(() => process.kill(pid, 0), /ESRCH/);
  assert.ok(!log.some((l) => /killing it/.test(l)), log.join('\n'));
});

test('the editor\'s settings travel as initializationOptions: a permission rule from them applies', async () => {
  const { client } = realClient({ initializationOptions: { permission: { bash: { 'echo *': 'allow' } } } });
  await client.start();
  let asked = false;
  const sub = client.onNotification(Methods.permissionAsked, () => { asked = true; });
  const r = await execute(client, 'bash', { command: 'echo allowed-by-settings', description: 'echo' });
  sub.dispose();
  assert.equal(r.status, 'completed', JSON.stringify(r));
  assert.equal(asked, false, 'the rule from initializationOptions allowed the call without an ask');
});

test('requests sent together right after start each get their own answer', async () => {
  // The extension sends these four at once on every start; a daemon that mixed up their
  // methods answered about 1 start in 20 with "method not found".
  const { client } = realClient();
  for (let round = 0; round < 20; round++) {
    await (round === 0 ? client.start() : client.restart());
    const [resolve, asks, trust, calls] = await Promise.all([
      client.request<ResolveResult>(Methods.toolsResolve, { sessionID: 'vscode' }),
      client.request<ListAsksResult>(Methods.permissionList, {}),
      client.request<{ trusted: boolean }>(Methods.permissionTrust, { trusted: true }),
      client.request<CallsListResult>(Methods.callsList, { limit: 50 }),
    ]);
    assert.ok(resolve.tools.length > 0);
    assert.deepEqual(asks.asks, []);
    assert.equal(trust.trusted, true);
    assert.ok(Array.isArray(calls.calls));
  }
});

test('calls/list pages newest first through nextCursor, as the Tool Calls view loads it', async () => {
  const { client } = realClient({ initializationOptions: { permission: { bash: 'allow' } } });
  await client.start();
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await execute(client, 'bash', { command: `echo call-${i}`, description: `call ${i}` }, 'paging');
    assert.equal(r.status, 'completed', JSON.stringify(r));
    ids.push(r.callID);
  }
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page: CallsListResult = await client.request<CallsListResult>(Methods.callsList, { sessionID: 'paging', limit: 2, cursor });
    assert.ok(page.calls.length <= 2);
    seen.push(...page.calls.map((c) => c.callID));
    cursor = page.nextCursor;
    pages++;
  } while (cursor && pages < 10);
  assert.deepEqual(seen, [...ids].reverse());
  assert.equal(pages, 3);
});

test('a bash call that changes two files: calls/changes with contents, then calls/revert puts them back', async () => {
  const { client, ws } = realClient({ initializationOptions: { permission: { bash: 'allow', edit: 'allow' } } });
  fs.writeFileSync(path.join(ws, 'a.txt'), 'draft a\n');
  fs.writeFileSync(path.join(ws, 'b.txt'), 'draft b\n');
  await client.start();
  const r = await execute(client, 'bash', { command: 'sed -i s/draft/final/ a.txt b.txt' });
  assert.equal(r.status, 'completed', JSON.stringify(r));
  const list = await client.request<CallsListResult>(Methods.callsList, { sessionID: 's1' });
  assert.equal(list.calls[0].changes, 2);
  const ch = await client.request<CallsChangesResult>(Methods.callsChanges, { sessionID: 's1', callID: r.callID, contents: true });
  assert.deepEqual(ch.files.map((f) => [f.path, f.status, f.before, f.after]), [
    ['a.txt', 'modified', 'draft a\n', 'final a\n'], ['b.txt', 'modified', 'draft b\n', 'final b\n'],
  ]);
  const plan = await client.request<CallsRevertResult>(Methods.callsRevert, { sessionID: 's1', callID: r.callID, dryRun: true });
  assert.equal(plan.status, 'planned');
  assert.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'final a\n', 'a dry run changes nothing');
  const done = await client.request<CallsRevertResult>(Methods.callsRevert, { sessionID: 's1', callID: r.callID });
  assert.equal(done.status, 'reverted');
  assert.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'draft a\n');
  assert.equal(fs.readFileSync(path.join(ws, 'b.txt'), 'utf8'), 'draft b\n');
});

test('two windows on one folder share its daemon: an ask shows in both, the first answer wins, the other is told', async () => {
  const { client: a, ws } = realClient({ clientInfo: { name: 'window A' } });
  const b = new DaemonClient({
    spawn: { command: realDaemon(), args: ['--store', path.join(ws, '..', path.basename(ws) + '.db')] },
    workspaceFolder: ws,
    clientInfo: { name: 'window B' },
    log: () => {},
  });
  clients.push(b);
  await a.start();
  const both = nextNotification<ClientsParams>(a, Methods.clientsChanged, (p) => p.clients.length === 2);
  await b.start();
  assert.deepEqual((await both).clients.map((c) => c.name), ['window A', 'window B']);
  const askedA = nextNotification<AskedParams>(a, Methods.permissionAsked);
  const askedB = nextNotification<AskedParams>(b, Methods.permissionAsked);
  const result = execute(b, 'bash', { command: 'echo from-window-b' }, 'sb');
  const [askA, askB] = await Promise.all([askedA, askedB]);
  assert.equal(askA.id, askB.id);
  assert.equal(askA.client?.name, 'window B', 'the ask names the window whose call it is');
  const answered = nextNotification<AnsweredParams>(b, Methods.permissionAnswered, (p) => p.id === askA.id);
  await a.request(Methods.permissionReply, { id: askA.id, reply: 'once' });
  assert.equal((await answered).client?.name, 'window A');
  assert.equal((await result).status, 'completed');
  const listed = await a.request<CallsListResult>(Methods.callsList, { client: 'window B' });
  assert.deepEqual(listed.calls.map((c) => c.client?.name), ['window B']);
});
