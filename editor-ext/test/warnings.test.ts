// Daemon warnings with a fix (the checkpoints' inotify limit): shown once, again only after
// they cleared and came back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newWarnings, warningText } from '../src/warnings';

const limit = { path: 'checkpoints', severity: 'warning', message: 'Checkpoints: the limit ran out.', fix: 'sudo sysctl fs.inotify.max_user_watches=524288' };
const plain = { path: '.toolsd/tool/bad.json', severity: 'error', message: 'bad' };

test('a diagnostic with a fix is shown once while it lasts, and again when it comes back', () => {
  let r = newWarnings(new Set(), [{ folder: 'shop', d: limit }, { folder: 'shop', d: plain }]);
  assert.deepEqual(r.show.map((x) => x.d.path), ['checkpoints']);
  r = newWarnings(r.shown, [{ folder: 'shop', d: limit }]);
  assert.equal(r.show.length, 0);
  r = newWarnings(r.shown, []);
  assert.equal(r.show.length, 0);
  r = newWarnings(r.shown, [{ folder: 'shop', d: limit }]);
  assert.equal(r.show.length, 1);
  r = newWarnings(r.shown, [{ folder: 'shop', d: limit }, { folder: 'blog', d: limit }]);
  assert.deepEqual(r.show.map((x) => x.folder), ['blog']);
});

test('the text names the command that fixes it, and the folder when there are several', () => {
  assert.equal(warningText({ folder: 'shop', d: limit }, 1), 'toolsd: Checkpoints: the limit ran out. To fix it, run: sudo sysctl fs.inotify.max_user_watches=524288');
  assert.match(warningText({ folder: 'shop', d: limit }, 2), /^toolsd: shop: Checkpoints/);
});
