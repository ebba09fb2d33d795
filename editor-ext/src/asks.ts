// Permission asks: each permission/asked becomes a notification (a modal when destructive) with
// "Allow once", "Always allow…", "Reject…" and, for edits, "Show diff". Pending asks are listed
// again after a restart or a window reload (permission/list).

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { errText } from './client';
import { applyUnifiedDiff } from './diff';
import { DaemonManager, FolderDaemon, clientLabel } from './manager';
import { AnsweredParams, AskedParams, ErrorCodes, ListAsksResult, Methods, ProgressParams, ReplyParams, ReplyResult } from './protocol';

const ALLOW_ONCE = 'Allow once';
const ALWAYS = 'Always allow…';
const REJECT = 'Reject…';
const SHOW_DIFF = 'Show diff';

interface Pending { ask: AskedParams; fd: FolderDaemon; showing: boolean }

/** Proposed contents for the diff editor's right side, by URI path. */
class ProposedContent implements vscode.TextDocumentContentProvider {
  static readonly scheme = 'toolsd-proposed';
  private readonly docs = new Map<string, string>();
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  set(uri: vscode.Uri, text: string): void { this.docs.set(uri.toString(), text); this.emitter.fire(uri); }
  provideTextDocumentContent(uri: vscode.Uri): string { return this.docs.get(uri.toString()) ?? ''; }
}

export class Asks implements vscode.Disposable {
  private readonly pending = new Map<string, Pending>();
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires when the set of pending asks changed. */
  readonly onDidChange = this.changed.event;
  private readonly proposed = new ProposedContent();
  private readonly subs: vscode.Disposable[] = [];

  constructor(manager: DaemonManager, private readonly output: vscode.OutputChannel) {
    this.subs.push(
      vscode.workspace.registerTextDocumentContentProvider(ProposedContent.scheme, this.proposed),
      vscode.commands.registerCommand('toolsd.showPendingAsks', () => this.pickPending()),
    );
    manager.forEach((fd) => [
      fd.client.onNotification<AskedParams>(Methods.permissionAsked, (ask) => this.add(fd, ask)),
      // Answered in another window (or released by an "always", or withdrawn): drop it here.
      fd.client.onNotification<AnsweredParams>(Methods.permissionAnswered, (a) => this.drop(a.id)),
      fd.client.onNotification<ProgressParams>(Methods.toolsProgress, (p) => {
        // A call that ended (cancelled, say) withdraws its asks.
        if (p.status !== 'queued' && p.status !== 'pending' && p.status !== 'running') this.dropCall(fd, p.callID);
      }),
      fd.client.onDidStart(() => void this.relist(fd)),
      fd.client.onDidChangeState((s) => { if (s !== 'running') this.dropDaemon(fd); }),
    ]);
  }

  count(): number { return this.pending.size; }

  /** Whether a call of this daemon waits for an answer. */
  waiting(fd: FolderDaemon, callID: string): boolean {
    for (const p of this.pending.values()) if (p.fd === fd && p.ask.callID === callID) return true;
    return false;
  }

  private add(fd: FolderDaemon, ask: AskedParams): void {
    if (this.pending.has(ask.id)) return;
    const p: Pending = { ask, fd, showing: false };
    this.pending.set(ask.id, p);
    this.changed.fire();
    void this.present(p);
  }

  private drop(id: string): void {
    if (this.pending.delete(id)) this.changed.fire();
  }

  private dropCall(fd: FolderDaemon, callID: string): void {
    let any = false;
    for (const [id, p] of this.pending) if (p.fd === fd && p.ask.callID === callID) { this.pending.delete(id); any = true; }
    if (any) this.changed.fire();
  }

  private dropDaemon(fd: FolderDaemon): void {
    let any = false;
    for (const [id, p] of this.pending) if (p.fd === fd) { this.pending.delete(id); any = true; }
    if (any) this.changed.fire();
  }

  /** Shows again the asks a (re)started daemon still waits on. */
  private async relist(fd: FolderDaemon): Promise<void> {
    try {
      const r = await fd.client.request<ListAsksResult>(Methods.permissionList, {});
      for (const ask of r.asks ?? []) this.add(fd, ask);
    } catch (e) {
      this.output.appendLine(`[extension] permission/list failed: ${errText(e)}`);
    }
  }

  private async pickPending(): Promise<void> {
    const items = [...this.pending.values()].map((p) => ({ label: summary(p.ask), description: [clientLabel(p.ask.client), p.ask.sessionID].filter(Boolean).join(' · '), p }));
    if (items.length === 0) { void vscode.window.showInformationMessage('toolsd: no pending asks.'); return; }
    const pick = await vscode.window.showQuickPick(items, { title: 'toolsd: pending asks' });
    if (pick) void this.present(pick.p, true);
  }

  /** Shows the ask until it is answered or dismissed; "Show diff" and cancelled sub-steps come back to it. */
  private async present(p: Pending, again = false): Promise<void> {
    if (p.showing && !again) return;
    p.showing = true;
    try {
      const ask = p.ask;
      const isEdit = typeof ask.metadata?.diff === 'string' || typeof ask.metadata?.filePath === 'string';
      // In a modal the first button is the default: for a destructive ask that is the safe one.
      const buttons = ask.destructive
        ? [...(isEdit ? [SHOW_DIFF] : []), REJECT, ALWAYS, ALLOW_ONCE]
        : [ALLOW_ONCE, ALWAYS, REJECT, ...(isEdit ? [SHOW_DIFF] : [])];
      while (this.pending.get(ask.id) === p) {
        const message = summary(ask);
        const detail = details(ask);
        const choice = ask.destructive
          ? await vscode.window.showWarningMessage(message, { modal: true, detail }, ...buttons)
          : await vscode.window.showInformationMessage(detail ? `${message} — ${detail}` : message, ...buttons);
        if (this.pending.get(ask.id) !== p) return; // answered elsewhere or withdrawn meanwhile
        if (choice === undefined) return; // dismissed: stays pending (toolsd: Show Pending Asks)
        if (choice === SHOW_DIFF) { await this.showDiff(ask); continue; }
        if (choice === ALLOW_ONCE) { await this.reply(p, { id: ask.id, reply: 'once' }); return; }
        if (choice === ALWAYS) {
          const r = await pickAlways(ask);
          if (!r) continue;
          await this.reply(p, { id: ask.id, reply: 'always', scope: r.scope, always: r.patterns });
          return;
        }
        if (choice === REJECT) {
          const message = await vscode.window.showInputBox({
            title: `Reject ${ask.tool}`,
            prompt: 'A message for the model: why, and what to do instead (optional)',
            placeHolder: 'e.g. do not touch the lockfile; run the tests instead',
          });
          if (message === undefined) continue;
          await this.reply(p, { id: ask.id, reply: 'reject', ...(message ? { message } : {}) });
          return;
        }
      }
    } finally {
      p.showing = false;
    }
  }

  private async reply(p: Pending, params: ReplyParams): Promise<void> {
    try {
      const r = await p.fd.client.request<ReplyResult>(Methods.permissionReply, params);
      this.pending.delete(params.id);
      for (const id of r?.released ?? []) this.pending.delete(id);
      this.changed.fire();
    } catch (e: any) {
      this.pending.delete(params.id);
      this.changed.fire();
      if (e?.code === ErrorCodes.NotFound || e?.code === ErrorCodes.Conflict) {
        void vscode.window.showInformationMessage('toolsd: this ask was already answered or withdrawn.');
      } else {
        void vscode.window.showErrorMessage(`toolsd: the answer did not reach the daemon: ${errText(e)}`);
      }
    }
  }

  /** Opens VS Code's diff editor between the file as it is and the content the edit proposes. */
  private async showDiff(ask: AskedParams): Promise<void> {
    const md = ask.metadata ?? {};
    const filePath = typeof md.filePath === 'string' ? md.filePath : undefined;
    const diff = typeof md.diff === 'string' ? md.diff : undefined;
    const name = filePath ? path.basename(filePath) : ask.tool;
    const exists = !!filePath && fs.existsSync(filePath);
    const current = exists ? (await vscode.workspace.openTextDocument(vscode.Uri.file(filePath!))).getText() : '';
    let proposed: string | undefined = typeof md.newContent === 'string' ? md.newContent : undefined;
    if (proposed === undefined && diff !== undefined) {
      try { proposed = applyUnifiedDiff(current, diff); } catch (e) {
        this.output.appendLine(`[extension] the diff of ask ${ask.id} does not apply to ${filePath}: ${errText(e)}; showing the diff text`);
      }
    }
    if (proposed === undefined) {
      const uri = vscode.Uri.from({ scheme: ProposedContent.scheme, path: `/${ask.id}/${name}.diff` });
      this.proposed.set(uri, diff ?? JSON.stringify(md, null, 2));
      await vscode.window.showTextDocument(uri, { preview: true });
      return;
    }
    const right = vscode.Uri.from({ scheme: ProposedContent.scheme, path: `/${ask.id}/${name}` });
    this.proposed.set(right, proposed);
    let left: vscode.Uri;
    if (exists) left = vscode.Uri.file(filePath!);
    else {
      left = vscode.Uri.from({ scheme: ProposedContent.scheme, path: `/${ask.id}/empty/${name}` });
      this.proposed.set(left, '');
    }
    await vscode.commands.executeCommand('vscode.diff', left, right, `${name} ↔ proposed by ${ask.tool} (toolsd)`, { preview: true });
  }

  dispose(): void {
    this.subs.forEach((s) => s.dispose());
    this.changed.dispose();
  }
}

/** The ask in one line: "toolsd: GitHub Copilot Chat wants to run `make test`" for an agent's call. */
function summary(ask: AskedParams): string {
  const who = clientLabel(ask.client);
  const subject = who ? `${who} (${ask.tool})` : ask.tool;
  const md = ask.metadata ?? {};
  const cmd = typeof md.command === 'string' ? `\`${oneLine(md.command)}\`` : '';
  const list = (ps: string[]) => ps.map((p) => vscode.workspace.asRelativePath(p)).join(', ');
  switch (ask.permission) {
    case 'bash':
      if (cmd) return `toolsd: ${subject} wants to run ${cmd}`;
      break;
    case 'edit':
      if (typeof md.filePath === 'string') return `toolsd: ${subject} wants to change ${vscode.workspace.asRelativePath(md.filePath)}`;
      return `toolsd: ${subject} wants to write ${list(ask.patterns)}${cmd ? ` (by ${cmd})` : ''}`;
    case 'external_directory':
      return `toolsd: ${subject} wants to reach outside the workspace: ${ask.patterns.join(', ')}${cmd ? ` (by ${cmd})` : ''}`;
    case 'read':
      return `toolsd: ${subject} wants to read ${list(ask.patterns)}`;
  }
  return `toolsd: ${subject} asks for ${ask.permission}: ${ask.patterns.join(', ')}${cmd ? ` (by ${cmd})` : ''}`;
}

function details(ask: AskedParams): string {
  const parts: string[] = [];
  const md = ask.metadata ?? {};
  if (typeof md.cwd === 'string' || typeof md.workdir === 'string') parts.push(`in ${md.cwd ?? md.workdir}`);
  if (Array.isArray(md.files) && md.files.length > 1) parts.push(`${md.files.length} files`);
  if (typeof md.additions === 'number' && typeof md.deletions === 'number') parts.push(`+${md.additions} −${md.deletions} lines`);
  if (ask.destructive) parts.push('it deletes or overwrites something');
  const sb = md.sandbox as { confined?: boolean; mode?: string; network?: string; why?: string } | undefined;
  if (sb && sb.confined) parts.push(`🛡 runs in the sandbox (${sb.mode ?? 'confined'}; writes only the workspace and temp; network: ${sb.network ?? 'none'})`);
  else if (sb && sb.why) parts.push(`runs outside the sandbox: ${sb.why}`);
  if (Array.isArray(md.blocked) && md.blocked.length > 0) parts.push(`the sandbox blocked: ${md.blocked.join('; ')}`);
  // Why it asks: the rule and where it is written, a remembered answer, or why no rule
  // could allow it (the line is not fully understood; a command's arguments are outside what
  // a rule with a wildcard covers). A daemon without provenance sends the older fields.
  if (ask.provenance?.text) parts.push(`why it asks: ${ask.provenance.text}`);
  else {
    if (Array.isArray(md.reasons) && md.reasons.length > 0) parts.push(`not fully understood: ${md.reasons.join('; ')}`);
    if (typeof md.reason === 'string' && md.reason) parts.push(`why it asks: ${md.reason}`);
    if (ask.rule && ask.rule.pattern) parts.push(`rule: ${ask.rule.permission} ${ask.rule.pattern} → ${ask.rule.action}${ask.rule.source ? ` (${ask.rule.source})` : ''}`);
  }
  return parts.join('; ');
}

function oneLine(s: string): string {
  const l = s.replace(/\s*\n\s*/g, ' ⏎ ');
  return l.length > 200 ? l.slice(0, 199) + '…' : l;
}

/** Asks which patterns to allow from now on and for how long. */
async function pickAlways(ask: AskedParams): Promise<{ patterns: string[]; scope: 'session' | 'workspace' } | undefined> {
  type Item = vscode.QuickPickItem & { pattern: string };
  const items: Item[] = [];
  const exact = new Set(ask.patterns ?? []);
  // The suggested prefixes come first and are preselected; the exact patterns allow only this much.
  const suggested = (ask.always ?? []).filter((a) => !exact.has(a));
  for (const a of suggested) items.push({ label: a, description: 'suggested', pattern: a, picked: true });
  for (const x of [...(ask.always ?? []).filter((a) => exact.has(a)), ...(ask.patterns ?? [])]) {
    if (!items.some((i) => i.pattern === x)) items.push({ label: x, description: 'exactly this', pattern: x, picked: suggested.length === 0 });
  }
  let patterns: string[];
  if (items.length <= 1) patterns = items.map((i) => i.pattern);
  else {
    const picked = await vscode.window.showQuickPick(items, {
      title: `Always allow ${ask.permission}: which patterns?`,
      canPickMany: true,
      placeHolder: 'The suggested prefixes are selected; pick the exact commands instead to allow only them',
    });
    if (!picked || picked.length === 0) return undefined;
    patterns = picked.map((i) => i.pattern);
  }
  const scope = await vscode.window.showQuickPick(
    [
      { label: 'This session', description: 'until the agent session ends', scope: 'session' as const },
      { label: 'This workspace', description: 'remembered by toolsd for this folder', scope: 'workspace' as const },
    ],
    { title: `Always allow ${patterns.join(', ')} for…` },
  );
  return scope ? { patterns, scope: scope.scope } : undefined;
}
