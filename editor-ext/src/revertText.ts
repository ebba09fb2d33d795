// The texts of a revert's confirmation and outcome, from calls/revert's answer. Pure functions; no
// 'vscode' import.

import { CallRef, CallsRevertResult } from './protocol';

const MAX_LISTED = 30;

function callName(c: CallRef): string {
  return c.tool ? `${c.callID} (${c.tool})` : c.callID;
}

/** The confirmation of a planned revert (a dry run): a message, the file list, and whether it overwrites changes. */
export function confirmation(plan: CallsRevertResult, what: string): { message: string; detail: string; conflicts: number } {
  const lines: string[] = [];
  let conflicts = 0;
  for (const f of plan.files.slice(0, MAX_LISTED)) {
    let l = `${f.action === 'delete' ? 'delete' : f.action === 'create' ? 'bring back' : 'restore'} ${f.path}`;
    if (f.skipped) l += ` — left as it is: ${f.skipped}`;
    else if (f.conflict) l += ` — ${f.conflict}`;
    lines.push(l);
  }
  for (const f of plan.files) if (f.conflict && !f.skipped) conflicts++;
  if (plan.files.length > MAX_LISTED) lines.push(`… and ${plan.files.length - MAX_LISTED} more`);
  const extra: string[] = [];
  if (conflicts > 0) {
    extra.push(`${conflicts} file${conflicts === 1 ? '' : 's'} changed since: reverting overwrites ${conflicts === 1 ? 'that change' : 'those changes'}.`);
  }
  if (plan.concurrent.length > 0) {
    extra.push(`Calls that ran at the same time touched the same files; their changes to them are undone too: ${plan.concurrent.map(callName).join(', ')}.`);
  }
  const n = plan.files.length;
  return {
    message: `Revert ${what}? ${n} file${n === 1 ? '' : 's'} will be put back as ${n === 1 ? 'it was' : 'they were'} before.`,
    detail: [...lines, ...(extra.length ? ['', ...extra] : [])].join('\n'),
    conflicts,
  };
}

/** One line saying what a revert did. */
export function outcome(r: CallsRevertResult): string {
  const restored = r.files.filter((f) => !f.skipped).length;
  const skipped = r.files.length - restored;
  switch (r.status) {
    case 'nothing': return 'Nothing to revert: the files are already as they were.';
    case 'conflict': return `Not reverted: ${r.files.filter((f) => f.conflict).length} file(s) changed since.`;
    default: return `Reverted ${restored} file${restored === 1 ? '' : 's'}${skipped ? `; ${skipped} left as they are` : ''}.`;
  }
}
