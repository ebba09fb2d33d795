// "Show Changes" and "Revert" on a call and on a session of the Tool Calls view: calls/changes shown
// in VS Code's diff editor (the multi-file one for several files) through read-only documents of
// scheme toolsd-change, and calls/revert after a modal confirmation that lists the files.

import * as vscode from 'vscode';
import { errText } from './client';
import { DaemonManager, FolderDaemon } from './manager';
import { CallsChangesResult, CallsRevertParams, CallsRevertResult, FileChangeInfo, Methods } from './protocol';
import { confirmation, outcome } from './revertText';

/** What a command of the Tool Calls view acts on: one call, or a whole session. */
export interface ChangesTarget { fd: FolderDaemon; sessionID: string; callID?: string; oldestCallID?: string; title: string }

export class Changes implements vscode.Disposable {
  private readonly subs: vscode.Disposable[] = [];

  constructor(private readonly manager: DaemonManager, private readonly refresh: () => void) {
    this.subs.push(
      vscode.workspace.registerTextDocumentContentProvider('toolsd-change', new ChangeDocuments(manager)),
    );
  }

  /** Opens a target's changes: one file in the diff editor, several in the multi-file diff editor. */
  async show(t: ChangesTarget): Promise<void> {
    let r: CallsChangesResult;
    try {
      r = await t.fd.client.request<CallsChangesResult>(Methods.callsChanges, { sessionID: t.sessionID, callID: t.callID });
    } catch (e) {
      void vscode.window.showErrorMessage(`toolsd: cannot show the changes of ${t.title}: ${errText(e)}`);
      return;
    }
    const files = r.files.filter((f) => f.kind !== 'dir' && f.oldKind !== 'dir');
    if (files.length === 0) {
      void vscode.window.showInformationMessage(`toolsd: ${t.title} changed no files.${r.notes.length ? ' ' + r.notes.join(' ') : ''}`);
      return;
    }
    const uris = files.map((f) => ({ f, before: changeUri(t, f, 'before'), after: changeUri(t, f, 'after') }));
    const title = `Changes of ${t.title}`;
    if (uris.length === 1) {
      const { f, before, after } = uris[0];
      await vscode.commands.executeCommand('vscode.diff', before, after, `${f.path} (${label(f)}) — ${title}`, { preview: true });
    } else {
      await vscode.commands.executeCommand('vscode.changes', title, uris.map(({ f, before, after }) =>
        [vscode.Uri.joinPath(t.fd.folder.uri, f.path), before, after]));
    }
    for (const n of r.notes) void vscode.window.showWarningMessage(`toolsd: ${n}`);
  }

  /** Reverts a target after a modal confirmation that lists the files (from a dry run). */
  async revert(t: ChangesTarget, scope: 'call' | 'from'): Promise<void> {
    const callID = t.callID ?? t.oldestCallID;
    if (!callID) return;
    const params: CallsRevertParams = { sessionID: t.sessionID, callID, scope: t.callID ? scope : 'from' };
    let plan: CallsRevertResult;
    try {
      plan = await t.fd.client.request<CallsRevertResult>(Methods.callsRevert, { ...params, dryRun: true });
    } catch (e) {
      void vscode.window.showErrorMessage(`toolsd: cannot revert ${t.title}: ${errText(e)}`);
      return;
    }
    if (plan.files.length === 0) {
      void vscode.window.showInformationMessage(`toolsd: nothing to revert: the files ${t.title} changed are already as they were.`);
      return;
    }
    const c = confirmation(plan, t.title);
    const go = c.conflicts > 0 ? 'Revert and Overwrite' : 'Revert';
    const pick = await vscode.window.showWarningMessage(c.message, { modal: true, detail: c.detail }, go);
    if (pick !== go) return;
    try {
      const r = await t.fd.client.request<CallsRevertResult>(Methods.callsRevert, { ...params, force: c.conflicts > 0 });
      const text = outcome(r);
      if (r.status === 'conflict') void vscode.window.showWarningMessage(`toolsd: ${text}`);
      else void vscode.window.showInformationMessage(`toolsd: ${text}`);
    } catch (e) {
      void vscode.window.showErrorMessage(`toolsd: the revert of ${t.title} failed: ${errText(e)}`);
    }
    this.refresh();
  }

  dispose(): void { this.subs.forEach((s) => s.dispose()); }
}

function label(f: FileChangeInfo): string {
  if (f.status === 'renamed' && f.oldPath) return `renamed from ${f.oldPath}`;
  return f.status === 'typeChanged' ? 'type changed' : f.status;
}

/** toolsd-change:/<path>?folder=…&session=…&call=…&side=before|after */
function changeUri(t: ChangesTarget, f: FileChangeInfo, side: 'before' | 'after'): vscode.Uri {
  const q = new URLSearchParams({ folder: t.fd.folder.uri.toString(), session: t.sessionID, call: t.callID ?? '', side });
  const p = side === 'before' && f.oldPath ? f.oldPath : f.path;
  return vscode.Uri.from({ scheme: 'toolsd-change', path: '/' + p, query: q.toString() });
}

/** One side of a changed file, from calls/changes with contents. */
class ChangeDocuments implements vscode.TextDocumentContentProvider {
  constructor(private readonly manager: DaemonManager) {}
  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const q = new URLSearchParams(uri.query);
    const fd = this.manager.all().find((d) => d.folder.uri.toString() === q.get('folder')) ?? this.manager.primary();
    if (!fd) throw new Error('no toolsd daemon runs for this window');
    const p = uri.path.replace(/^\//, '');
    const side = q.get('side') === 'before' ? 'before' : 'after';
    const r = await fd.client.request<CallsChangesResult>(Methods.callsChanges, {
      sessionID: q.get('session'), callID: q.get('call') || undefined, contents: true,
    });
    const f = r.files.find((x) => x.path === p || (side === 'before' && x.oldPath === p));
    if (!f) return '';
    if ((side === 'before' ? f.oldKind : f.kind) === '') return '';
    const text = side === 'before' ? f.before : f.after;
    if (text !== undefined) return text;
    if (f.binary) return `(binary file: ${f.diff.trim()})\n`;
    if (f.notKept) return `(content not kept: ${f.notKept})\n`;
    if ((side === 'before' ? f.oldKind : f.kind) === 'link') return `(${f.diff.trim()})\n`;
    return '';
  }
}
