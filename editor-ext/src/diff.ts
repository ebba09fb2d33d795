// Applying a unified diff to a text, for showing an edit ask's proposed content in VS Code's diff
// editor. Pure functions; no 'vscode' import.

export interface Hunk { oldStart: number; oldLines: number; newStart: number; newLines: number; lines: string[] }

/** Parses the hunks of a unified diff (file headers and "\ No newline" markers are skipped). */
export function parseHunks(diff: string): Hunk[] {
  const hunks: Hunk[] = [];
  let cur: Hunk | undefined;
  let oldLeft = 0;
  let newLeft = 0;
  for (const line of diff.split('\n')) {
    const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (m) {
      cur = { oldStart: +m[1], oldLines: m[2] === undefined ? 1 : +m[2], newStart: +m[3], newLines: m[4] === undefined ? 1 : +m[4], lines: [] };
      oldLeft = cur.oldLines;
      newLeft = cur.newLines;
      hunks.push(cur);
      continue;
    }
    if (!cur || (oldLeft === 0 && newLeft === 0) || line.startsWith('\\')) continue;
    // An empty line inside a hunk is a context line whose leading space was stripped.
    const l = line === '' ? ' ' : line;
    if (l[0] === ' ') { oldLeft--; newLeft--; } else if (l[0] === '-') oldLeft--; else if (l[0] === '+') newLeft--; else continue;
    cur.lines.push(l);
  }
  return hunks;
}

/**
 * Applies a unified diff to text and returns the new text, or throws when a hunk's context or
 * removed lines do not match (the file changed since the diff was made).
 */
export function applyUnifiedDiff(text: string, diff: string): string {
  const hunks = parseHunks(diff);
  if (hunks.length === 0) throw new Error('the diff has no hunks');
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const endsWithEol = text.endsWith('\n');
  const src = text === '' ? [] : text.replace(/\r\n/g, '\n').replace(/\n$/, '').split('\n');
  const out: string[] = [];
  let pos = 0; // index into src
  for (const h of hunks) {
    const start = h.oldLines === 0 ? h.oldStart : h.oldStart - 1;
    if (start < pos || start > src.length) throw new Error(`hunk at line ${h.oldStart} is out of order or past the end`);
    out.push(...src.slice(pos, start));
    pos = start;
    for (const l of h.lines) {
      const body = l.slice(1);
      if (l[0] === '+') { out.push(body); continue; }
      if (src[pos] !== body) throw new Error(`hunk at line ${h.oldStart} does not match line ${pos + 1}: expected ${JSON.stringify(body)}, found ${JSON.stringify(src[pos])}`);
      if (l[0] === ' ') out.push(body);
      pos++;
    }
  }
  out.push(...src.slice(pos));
  // "\ No newline at end of file" after a '+' or ' ' line: the new text has no final newline.
  const dl = diff.split('\n');
  const marked = dl.some((l) => l.startsWith('\\'));
  const newNoEol = dl.some((l, i) => l.startsWith('\\') && i > 0 && (dl[i - 1][0] === '+' || dl[i - 1][0] === ' '));
  let result = out.join(eol);
  const finalEol = marked ? !newNoEol : endsWithEol || src.length === 0;
  if (out.length > 0 && finalEol) result += eol;
  return result;
}
