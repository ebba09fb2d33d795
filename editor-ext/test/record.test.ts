// A call's record rendered as the page a person reads (record.ts), from a fixed record and
// from one the real daemon made.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { DaemonClient } from '../src/client';
import { CallRecord, ExecuteResult, Methods } from '../src/protocol';
import { renderRecord } from '../src/record';
import { realDaemon, tempWorkspace } from './helpers';

const links = {
  output: (id: string) => `toolsd-output:/${id}.log`,
  file: (p: string, line?: number, column?: number) => `file://${p}#L${line},${column}`,
  raw: 'toolsd-call:/c1.json',
};

const record: CallRecord = {
  callID: 'c1', sessionID: 's1', messageID: 'm1', tool: 'bash', status: 'completed', title: 'make build',
  args: { command: 'make build' }, metadata: { exit: 0, workdir: '.' }, output: 'ok\n', truncated: true, outputID: 'out_1',
  attachments: [], startedAt: '2026-11-30T12:00:00Z', endedAt: '2026-11-30T12:00:02.5Z',
  decisions: [{
    permission: 'bash', patterns: ['make build'], action: 'allow', by: 'person', reply: 'once', at: '2026-11-30T12:00:01.5Z',
    askedAt: '2026-11-30T12:00:00Z', waitedMs: 1500, answeredBy: 'Visual Studio Code',
    provenance: { kind: 'rule', text: 'rule bash "*": ask (user config /home/u/.config/toolsd/config.json:3:7)', rule: 'bash "*": ask',
      layer: 'user', file: '/home/u/.config/toolsd/config.json', line: 3, column: 7, pattern: 'make build' },
  }, {
    permission: 'edit', patterns: ['notes.txt'], action: 'allow', by: 'rule', at: '2026-11-30T12:00:01.5Z',
    provenance: { kind: 'remembered', text: 'remembered answer edit "notes.txt": allow (an answer remembered for this workspace on 2026-11-30 12:00:00 UTC by Visual Studio Code)',
      layer: 'workspace', rememberedBy: 'Visual Studio Code', rememberedAt: '2026-11-30T12:00:00Z' },
  }],
};

test('a record renders as a page: what ran, why it was allowed, who answered, the output and its links', () => {
  const page = renderRecord(record, links);
  for (const want of [
    '# make build', '**completed**', 'took 2.5 s',
    '## What ran', '```sh\nmake build\n```',
    '## Why it was allowed',
    '- **bash** `make build` → **allow**',
    '[/home/u/.config/toolsd/config.json:3:7](file:///home/u/.config/toolsd/config.json#L3,7)',
    'a person answered **once** through Visual Studio Code, asked 2026-11-30 12:00:00 UTC, after 1.5 s',
    'remembered answer edit "notes.txt": allow',
    '## Output', '```\nok\n```', '[the full output](toolsd-output:/out_1.log)', '[The record as JSON](toolsd-call:/c1.json)',
  ]) assert.ok(page.includes(want), `missing ${JSON.stringify(want)} in:\n${page}`);
  assert.ok(!page.includes('"decisions"'), 'the page is not the raw JSON');
});

test('a refused call says why it was refused; an opaque line lists its reasons; a diff shows as changes', () => {
  const page = renderRecord({
    ...record, status: 'error', error: 'permission denied', output: '', truncated: false, outputID: undefined,
    metadata: { diff: '--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n' },
    decisions: [{ permission: 'bash', patterns: ['eval $X'], action: 'deny', by: 'person', reply: 'reject', message: 'not that', at: record.startedAt,
      provenance: { kind: 'opaque', text: 'the shell line is not fully understood, so it always asks: a; b', reasons: ['a', 'b'] } }],
  }, links);
  for (const want of ['## Why it was refused', 'a person answered **reject**', 'their message: “not that”', '    - a', '    - b', '## Changes', '```diff', '**Error:** permission denied']) {
    assert.ok(page.includes(want), `missing ${JSON.stringify(want)} in:\n${page}`);
  }
  assert.ok(!page.includes('the full output'));
});

test('the hooks that ran show on the page: what each decided or changed, how long, and where it is configured', () => {
  const page = renderRecord({
    ...record, args: { command: 'echo start one two' }, modelArgs: { command: 'echo start' },
    decisions: [{ permission: 'bash', patterns: ['echo start one two'], action: 'allow', by: 'hook', at: record.startedAt,
      provenance: { kind: 'hook', hook: 'two', text: 'hook "two" (user config /u/config.json:6:7) allowed it', layer: 'user', file: '/u/config.json', line: 6, column: 7 } }],
    hooks: [
      { hook: 'one', point: 'before', layer: 'user', file: '/u/config.json', line: 5, column: 7, startedAt: record.startedAt, durationMs: 31, outcome: 'ok',
        decision: 'allow', changed: ['args'], exitCode: 0, note: 'its allow was withdrawn' },
      { hook: 'guard.py', point: 'after', layer: 'project', startedAt: record.startedAt, durationMs: 1000, outcome: 'failed',
        error: 'it did not answer within 1s', onFailure: 'fail-open' },
      { hook: 'acme.secrets', point: 'before', layer: 'client', client: { id: 'x-1', name: 'VS Code' }, startedAt: record.startedAt, durationMs: 4, outcome: 'blocked',
        decision: 'deny', reason: '.env holds secrets' },
    ],
  }, links);
  for (const want of [
    'A hook changed the arguments; the model sent:', '"command": "echo start"',
    '  - decided by the hook `two`',
    '## Hooks',
    '- **before** `one` (user config [/u/config.json:5:7](file:///u/config.json#L5,7)) said **allow**, changed args · 31 ms · exit 0',
    '  - note: its allow was withdrawn',
    '- **after** `guard.py` (project config) **failed** (fail-open: passed over) · 1.0 s',
    '  - error: it did not answer within 1s',
    '- **before** `acme.secrets` (the editor VS Code) **blocked** the call · 4 ms',
    '  - reason: .env holds secrets',
  ]) assert.ok(page.includes(want), `missing ${JSON.stringify(want)} in:\n${page}`);
});

test('a record from the real daemon renders the rule from the editor\'s settings that allowed it', async () => {
  const ws = tempWorkspace();
  const client = new DaemonClient({
    spawn: { command: realDaemon(), args: ['--store', path.join(ws, '..', path.basename(ws) + '.db')] },
    workspaceFolder: ws, clientInfo: { name: 'editor-ext unit tests' },
    initializationOptions: { permission: { bash: { 'echo *': 'allow' } } },
  });
  try {
    await client.start();
    const r = await client.request<ExecuteResult>(Methods.toolsExecute, { sessionID: 's1', messageID: 'm1', callID: 'rec1', tool: 'bash', args: { command: 'echo page' } });
    assert.equal(r.status, 'completed', JSON.stringify(r));
    const rec = await client.request<CallRecord>(Methods.callsGet, { callID: 'rec1' });
    assert.equal(rec.decisions[0].provenance?.kind, 'rule');
    assert.equal(rec.decisions[0].provenance?.file, 'initializationOptions');
    const page = renderRecord(rec, links);
    assert.ok(page.includes('rule bash "echo \\*": allow (editor settings initializationOptions:1:'), page);
    assert.ok(page.includes('```sh\necho page\n```') && page.includes('page\n'), page);
  } finally {
    await client.dispose();
  }
});

test('a record from the real daemon shows the hook that blocked the call', async () => {
  const ws = tempWorkspace();
  const client = new DaemonClient({
    spawn: { command: realDaemon(), args: ['--store', path.join(ws, '..', path.basename(ws) + '.db')] },
    workspaceFolder: ws, clientInfo: { name: 'editor-ext unit tests' },
    initializationOptions: { hooks: { before: [{ name: 'no-push', match: 'Bash', if: 'bash(git push *)',
      command: ['python3', '-c', 'import sys; print("pushes wait for review", file=sys.stderr); sys.exit(2)'] }] } },
  });
  try {
    await client.start();
    const r = await client.request<ExecuteResult>(Methods.toolsExecute, { sessionID: 's1', messageID: 'm1', callID: 'hook1', tool: 'bash', args: { command: 'git push origin main' } });
    assert.equal(r.status, 'error', JSON.stringify(r));
    assert.ok(r.error?.includes('pushes wait for review'), r.error);
    const page = renderRecord(await client.request<CallRecord>(Methods.callsGet, { callID: 'hook1' }), links);
    for (const want of ['## Why it was refused', 'decided by the hook `no-push`', '## Hooks', '- **before** `no-push` (editor settings initializationOptions) **blocked** the call', '  - reason: pushes wait for review']) {
      assert.ok(page.includes(want), `missing ${JSON.stringify(want)} in:\n${page}`);
    }
  } finally {
    await client.dispose();
  }
});
