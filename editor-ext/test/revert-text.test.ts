// The revert confirmation's texts, from calls/revert answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CallsRevertResult } from '../src/protocol';
import { confirmation, outcome } from '../src/revertText';

const plan: CallsRevertResult = {
  status: 'planned', message: '',
  calls: [{ sessionID: 's', callID: 'c1', tool: 'bash' }],
  files: [
    { path: 'a.txt', action: 'restore', changedBy: [], alsoTouchedBy: [] },
    { path: 'new.txt', action: 'delete', changedBy: [], alsoTouchedBy: [] },
    { path: 'b.txt', action: 'restore', conflict: 'changed since call c1 outside toolsd', changedBy: [], alsoTouchedBy: [] },
  ],
  concurrent: [{ sessionID: 's', callID: 'c2', tool: 'write' }],
};

test('the confirmation lists every file, its action, its conflict, and the calls that ran at the same time', () => {
  const c = confirmation(plan, 'call sed');
  assert.equal(c.conflicts, 1);
  assert.match(c.message, /^Revert call sed\? 3 files will be put back/);
  assert.match(c.detail, /^restore a\.txt$/m);
  assert.match(c.detail, /^delete new\.txt$/m);
  assert.match(c.detail, /^restore b\.txt — changed since call c1 outside toolsd$/m);
  assert.match(c.detail, /1 file changed since: reverting overwrites that change/);
  assert.match(c.detail, /c2 \(write\)/);
});

test('a long list is cut, and the outcome counts what was left as it is', () => {
  const many: CallsRevertResult = { ...plan, concurrent: [], files: Array.from({ length: 40 }, (_, i) => ({ path: `f${i}`, action: 'restore' as const, changedBy: [], alsoTouchedBy: [] })) };
  assert.match(confirmation(many, 'x').detail, /… and 10 more/);
  const done: CallsRevertResult = { ...plan, status: 'reverted', files: [plan.files[0], { ...plan.files[2], skipped: 'changed while the revert ran' }] };
  assert.equal(outcome(done), 'Reverted 1 file; 1 left as they are.');
  assert.equal(outcome({ ...plan, status: 'conflict' }), 'Not reverted: 1 file(s) changed since.');
});
