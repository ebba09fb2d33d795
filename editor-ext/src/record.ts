// A call's record (calls/get) as a page a person reads: what ran, why it was allowed (or
// refused) and who answered, what it changed, and its output, with links to the full output
// and to the rules' files. Pure: no vscode import, so that it is unit-tested under node.

import { CallRecord, Decision, HookRun, Provenance } from './protocol';

export interface RecordLinks {
  /** The URI of a stored full output (outputs/read), for a truncated call. */
  output?: (outputID: string) => string;
  /** The URI of a rule's file at a line and column. */
  file?: (path: string, line?: number, column?: number) => string;
  /** The URI of the raw record (JSON). */
  raw?: string;
}

export function renderRecord(rec: CallRecord, links: RecordLinks = {}): string {
  const out: string[] = [];
  const args = (rec.args ?? {}) as Record<string, unknown>;
  const md = (rec.metadata ?? {}) as Record<string, unknown>;
  out.push(`# ${escapeMd(rec.title || rec.tool)}`, '');
  const facts = [`**${rec.status}**`, `tool \`${rec.tool}\``, `session \`${rec.sessionID}\``, `call \`${rec.callID}\``];
  if (rec.agent) facts.push(`agent \`${rec.agent}\``);
  if (rec.model) facts.push(`model \`${rec.model.providerID}/${rec.model.modelID}\``);
  facts.push(`started ${when(rec.startedAt)}`);
  if (rec.endedAt) facts.push(`took ${took(Date.parse(rec.endedAt) - Date.parse(rec.startedAt))}`);
  out.push(facts.join(' · '), '');

  out.push('## What ran', '');
  if (typeof args.command === 'string') {
    out.push(fence(args.command, 'sh'));
    if (typeof md.workdir === 'string') out.push('', `in \`${md.workdir}\``);
    if (typeof md.exit === 'number') out.push('', `exit code ${md.exit}${md.timedOut ? ' (timed out)' : ''}`);
  } else {
    out.push(fence(JSON.stringify(rec.args, null, 2), 'json'));
  }
  out.push('');
  if (rec.modelArgs !== undefined) {
    out.push('A hook changed the arguments; the model sent:', '', fence(JSON.stringify(rec.modelArgs, null, 2), 'json'), '');
  }

  const decisions = rec.decisions ?? [];
  const refused = decisions.some((d) => d.action === 'deny');
  out.push(refused ? '## Why it was refused' : '## Why it was allowed', '');
  if (decisions.length === 0) {
    out.push('Nothing was asked: the call was refused before its permissions were checked, or the tool asks none.', '');
  }
  for (const d of decisions) out.push(...decisionLines(d, links), '');

  const hooks = rec.hooks ?? [];
  if (hooks.length > 0) {
    out.push('## Hooks', '');
    for (const h of hooks) out.push(...hookLines(h, links));
    out.push('');
  }

  const diff = typeof md.diff === 'string' ? md.diff : '';
  if (diff) out.push('## Changes', '', fence(diff, 'diff'), '');

  out.push('## Output', '');
  if (rec.error) out.push(`**Error:** ${escapeMd(rec.error)}`, '');
  if (rec.output) out.push(fence(rec.output, ''));
  else if (!rec.error) out.push('(no output)');
  out.push('');
  if (rec.truncated && rec.outputID && links.output) {
    out.push(`The model saw this much; [the full output](${links.output(rec.outputID)}) is kept by toolsd.`, '');
  }
  if (links.raw) out.push(`---`, '', `[The record as JSON](${links.raw})`, '');
  return out.join('\n');
}

function decisionLines(d: Decision, links: RecordLinks): string[] {
  const what = `**${d.permission}** ${(d.patterns ?? []).map((p) => '`' + oneLine(p) + '`').join(', ')}`;
  const lines = [`- ${what} → **${d.action}**`];
  const p = d.provenance;
  if (p) lines.push(`  - ${provenanceLine(p, links)}`);
  else if (d.rule) lines.push(`  - rule ${d.rule.permission} "${d.rule.pattern}": ${d.rule.action}${d.rule.source ? ` (${d.rule.source})` : ''}`);
  if (p?.reasons && p.reasons.length > 1) for (const r of p.reasons) lines.push(`    - ${escapeMd(r)}`);
  if (d.by === 'person') {
    let a = `  - a person answered **${d.reply ?? ''}**${d.scope ? ` (for the ${d.scope})` : ''}`;
    if (d.answeredBy) a += ` through ${escapeMd(d.answeredBy)}`;
    if (d.askedAt) a += `, asked ${when(d.askedAt)}`;
    if (typeof d.waitedMs === 'number') a += `, after ${took(d.waitedMs)}`;
    lines.push(a);
    if (d.message) lines.push(`  - their message: “${escapeMd(d.message)}”`);
  } else if (d.by === 'hook') {
    lines.push(`  - decided by the hook \`${oneLine(p?.hook ?? '')}\` (see Hooks below)`);
  } else if (d.by === 'no-ui') {
    lines.push('  - no editor could show the ask, so it was refused');
  } else if (d.by === 'cancel') {
    lines.push(`  - the call was cancelled while the ask waited${typeof d.waitedMs === 'number' ? ` (${took(d.waitedMs)})` : ''}`);
  } else if (d.by === 'rule' && d.reply === 'always') {
    lines.push(`  - settled by an "always" answer given to another ask${d.answeredBy ? ` through ${escapeMd(d.answeredBy)}` : ''}`);
  }
  return lines;
}

/** A hook's run: which hook, where it is configured, how long, and what it decided or changed. */
function hookLines(h: HookRun, links: RecordLinks): string[] {
  const layers: Record<string, string> = { user: 'user config', editor: 'editor settings', project: 'project config' };
  let where = h.layer === 'client' ? `the editor ${h.client?.name ?? ''}`.trim() : layers[h.layer] ?? h.layer;
  if (h.file && h.line && links.file && h.file !== 'initializationOptions') {
    where += ` [${escapeMd(`${h.file}:${h.line}:${h.column ?? 1}`)}](${links.file(h.file, h.line, h.column)})`;
  } else if (h.file) {
    where += ` ${escapeMd(h.file)}`;
  }
  const did: string[] = [];
  if (h.outcome === 'blocked') did.push(h.point === 'permission' ? '**denied** the ask' : h.point === 'definition' ? '**hid** the tool' : '**blocked** the call');
  else if (h.outcome === 'failed') did.push(`**failed**${h.onFailure ? ` (${h.onFailure === 'fail-closed' ? 'fail-closed: what it guards was refused' : 'fail-open: passed over'})` : ''}`);
  else if (h.decision) did.push(`said **${h.decision}**`);
  if (h.changed && h.changed.length > 0) did.push(`changed ${h.changed.join(', ')}`);
  if (did.length === 0) did.push('had nothing to say');
  const lines = [`- **${h.point}** \`${oneLine(h.hook)}\` (${where}) ${did.join(', ')} · ${took(h.durationMs)}${typeof h.exitCode === 'number' ? ` · exit ${h.exitCode}` : ''}`];
  if (h.reason) lines.push(`  - reason: ${escapeMd(h.reason)}`);
  if (h.error) lines.push(`  - error: ${escapeMd(h.error)}`);
  if (h.context) lines.push(`  - added for the model: ${escapeMd(h.context)}`);
  if (h.note) lines.push(`  - note: ${escapeMd(h.note)}`);
  return lines;
}

/** One line saying what decided, with a link to where a rule is written. */
export function provenanceLine(p: Provenance, links: RecordLinks = {}): string {
  let text = escapeMd(p.text);
  if (p.file && p.line && links.file && p.file !== 'initializationOptions') {
    const at = `${p.file}:${p.line}:${p.column ?? 1}`;
    const i = p.text.indexOf(at);
    const link = `[${escapeMd(at)}](${links.file(p.file, p.line, p.column)})`;
    text = i >= 0 ? escapeMd(p.text.slice(0, i)) + link + escapeMd(p.text.slice(i + at.length)) : `${text} (${link})`;
  }
  return text;
}

function fence(s: string, lang: string): string {
  let ticks = '```';
  while (s.includes(ticks)) ticks += '`';
  return `${ticks}${lang}\n${s.replace(/\n$/, '')}\n${ticks}`;
}

function escapeMd(s: string): string {
  return s.replace(/([\\`*_[\]<>|])/g, '\\$1');
}

function oneLine(s: string): string {
  const l = s.replace(/\s*\n\s*/g, ' ⏎ ').replace(/`/g, 'ˋ');
  return l.length > 200 ? l.slice(0, 199) + '…' : l;
}

function when(iso: string): string {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? iso : new Date(t).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC').replace(/Z$/, ' UTC');
}

function took(ms: number): string {
  if (!(ms >= 0)) return '?';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}
