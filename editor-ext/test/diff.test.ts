import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyUnifiedDiff, parseHunks } from '../src/diff';

const cases: { name: string; text: string; diff: string; want: string }[] = [
  {
    name: 'replace a line in the middle',
    text: 'a\nb\nc\nd\n',
    diff: '--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\n d\n',
    want: 'a\nB\nc\nd\n',
  },
  {
    name: 'two hunks, insertion and deletion',
    text: '1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n',
    diff: '@@ -1,2 +1,3 @@\n 1\n+1.5\n 2\n@@ -8,3 +9,2 @@\n 8\n-9\n 10\n',
    want: '1\n1.5\n2\n3\n4\n5\n6\n7\n8\n10\n',
  },
  { name: 'new file', text: '', diff: '--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n', want: 'hello\nworld\n' },
  {
    name: 'new text without a final newline',
    text: 'x\n',
    diff: '@@ -1 +1 @@\n-x\n+y\n\\ No newline at end of file\n',
    want: 'y',
  },
  { name: 'empty context line with its space stripped', text: 'a\n\nb\n', diff: '@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n', want: 'a\n\nc\n' },
  { name: 'CRLF text keeps CRLF', text: 'a\r\nb\r\n', diff: '@@ -1,2 +1,2 @@\n-a\n+A\n b\n', want: 'A\r\nb\r\n' },
];

for (const c of cases) {
  test(`applyUnifiedDiff: ${c.name}`, () => {
    assert.equal(applyUnifiedDiff(c.text, c.diff), c.want);
  });
}

test('applyUnifiedDiff: a stale diff is refused with the line that differs', () => {
  assert.throws(() => applyUnifiedDiff('a\nX\nc\n', '@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n'), /does not match line 2/);
});

test('applyUnifiedDiff: text without hunks is refused', () => {
  assert.throws(() => applyUnifiedDiff('a\n', 'not a diff'), /no hunks/);
});

test('parseHunks: counts default to 1', () => {
  const [h] = parseHunks('@@ -3 +3 @@\n-x\n+y\n');
  assert.deepEqual([h.oldStart, h.oldLines, h.newStart, h.newLines, h.lines], [3, 1, 3, 1, ['-x', '+y']]);
});
