// Restart and start-failure policy of the client core. The crash cases run against the real daemon
// (test/real-daemon.test.ts); the cases here need a daemon that misbehaves on purpose, which only
// the fake (test/fake-daemon.js) can do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DaemonClient, DaemonState, StartError } from '../src/client';
import { fakeDaemon, tempWorkspace, waitForState } from './helpers';

function fakeClient(flags: string[], extra: Partial<ConstructorParameters<typeof DaemonClient>[0]> = {}) {
  const log: string[] = [];
  const client = new DaemonClient({
    spawn: { command: process.execPath, args: [fakeDaemon, ...flags] },
    workspaceFolder: tempWorkspace(),
    restart: { backoffMs: 1, maxBackoffMs: 5 },
    log: (l) => log.push(l),
    ...extra,
  });
  const states: DaemonState[] = [];
  client.onDidChangeState((s) => states.push(s));
  return { client, log, states };
}

const startFailures: { name: string; flags: string[]; want: RegExp }[] = [
  { name: 'initialize answered with an error', flags: ['--fail-initialize'], want: /refused initialize: workspaceFolder: fake refusal/ },
  { name: 'exit before initialize answered', flags: ['--exit-before-initialize'], want: /exited before initialize answered \(code 3\)/ },
];
for (const c of startFailures) {
  test(`a failed start is not restarted: ${c.name}`, async () => {
    const { client, states } = fakeClient(c.flags);
    await assert.rejects(client.start(), (e: Error) => e instanceof StartError && c.want.test(e.message));
    assert.equal(client.state, 'failed');
    assert.deepEqual(states, ['starting', 'failed']);
    assert.equal(client.restarts, 0);
    assert.equal((client as any).restartTimer, undefined, 'no restart is scheduled');
    assert.equal(client.pid, undefined);
    await client.dispose();
  });
}

test('a missing binary fails the start with a clear error', async () => {
  const client = new DaemonClient({ spawn: { command: '/nonexistent/toolsd' }, workspaceFolder: tempWorkspace() });
  await assert.rejects(client.start(), /cannot start \/nonexistent\/toolsd: .*ENOENT/);
  assert.equal(client.state, 'failed');
  await client.dispose();
});

test('a daemon that keeps crashing is restarted maxRestarts times, then left failed', async () => {
  const { client, states, log } = fakeClient(['--crash-on-initialized'], { restart: { maxRestarts: 2, backoffMs: 1, maxBackoffMs: 2 } });
  const failed = waitForState(client, 'failed');
  await client.start().catch(() => { /* it may crash before start resolves; the policy still applies */ });
  await failed;
  assert.equal(client.restarts, 2);
  assert.match(client.lastError?.message ?? '', /crashed 3 times/);
  assert.deepEqual(states.filter((s) => s === 'running').length, 3, `states: ${states.join(' ')}`);
  assert.ok(log.some((l) => l.includes('fake toolsd: initialize')), 'stderr reaches the log');
  await client.dispose();
});

test('restarts are serialised: concurrent restarts leave exactly one live daemon', async () => {
  const { client } = fakeClient([]);
  await client.start();
  const pids = new Set<number>();
  client.onDidStart(() => pids.add(client.pid!));
  await Promise.all([client.restart(), client.restart(), client.restart()]);
  assert.equal(client.state, 'running');
  assert.equal(pids.size, 3, 'each restart started its own process');
  for (const pid of pids) {
    if (pid === client.pid) continue;
    assert.throws(() => process.kill(pid, 0), /ESRCH/, `old daemon ${pid} is gone`);
  }
  await client.stop();
  assert.equal(client.state, 'stopped');
  await client.dispose();
});

test('stop kills a daemon that does not leave within the stop timeout', async () => {
  const { client, log } = fakeClient(['--hang-on-shutdown'], { stopTimeoutMs: 400 });
  await client.start();
  const pid = client.pid!;
  await client.stop();
  assert.equal(client.state, 'stopped');
  assert.throws(() => process.kill(pid, 0), /ESRCH/, 'the daemon was killed');
  assert.ok(log.some((l) => /did not exit within 400 ms; killing it/.test(l)), log.join('\n'));
  await client.dispose();
});

test('stop of a well-behaved daemon ends it through shutdown and exit, without a kill', async () => {
  const { client, log } = fakeClient([]);
  await client.start();
  const pid = client.pid!;
  await client.stop();
  assert.throws(() => process.kill(pid, 0), /ESRCH/);
  assert.ok(!log.some((l) => /killing it|shutdown did not complete/.test(l)), log.join('\n'));
  await client.dispose();
});
