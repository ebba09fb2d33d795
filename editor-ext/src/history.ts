// The "Tool Calls" history view fed by calls/list (paged, grouped by session); a call opens as a
// page rendered from its calls/get record (what ran, why it was allowed and who answered, its
// changes and output: record.ts; markdown turned into HTML by VS Code's own renderer) in a
// webview whose links open here (the rule's file at its line, the full output, the raw record),
// and a truncated call's full output opens through outputs/read in a read-only virtual document
// (scheme toolsd-output), one page of lines per document.
// A call that changed files, and every session, offers "Show Changes" and "Revert" (changes.ts).

import * as vscode from 'vscode';
import { errText } from './client';
import { Changes, ChangesTarget } from './changes';
import { DaemonManager, FolderDaemon, clientLabel } from './manager';
import { CallRecord, CallSummary, CallsListResult, Methods, OutputsReadResult } from './protocol';
import { renderRecord } from './record';

const PAGE = 50;
/** Lines per outputs/read request, and per document page of a full output. */
const READ_LINES = 2000;
const DOC_LINES = 20_000;

type Node =
  | { kind: 'session'; fd: FolderDaemon; sessionID: string; calls: CallSummary[] }
  | { kind: 'call'; fd: FolderDaemon; call: CallSummary }
  | { kind: 'output'; fd: FolderDaemon; call: CallSummary }
  | { kind: 'more'; fd: FolderDaemon }
  | { kind: 'message'; text: string };

interface Loaded { calls: CallSummary[]; cursor?: string; error?: string }

export class History implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly loaded = new Map<FolderDaemon, Loaded>();
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subs: vscode.Disposable[] = [];
  private refreshTimer: NodeJS.Timeout | undefined;
  private panel: vscode.WebviewPanel | undefined;
  private readonly changes: Changes;
  private readonly view: vscode.TreeView<Node>;
  /** What the view shows, per daemon, to skip redrawing when a reload brings nothing new. */
  private readonly shown = new Map<FolderDaemon, string>();

  constructor(private readonly manager: DaemonManager, onDidEndCall: vscode.Event<unknown>) {
    this.changes = new Changes(manager, () => this.refreshSoon());
    this.view = vscode.window.createTreeView('toolsd.history', { treeDataProvider: this, showCollapseAll: true });
    this.subs.push(
      this.changes,
      this.view,
      vscode.commands.registerCommand('toolsd.showChanges', async (node?: Node) => { const t = await this.target(node); if (t) return this.changes.show(t); }),
      vscode.commands.registerCommand('toolsd.revert', async (node?: Node) => { const t = await this.target(node); if (t) return this.changes.revert(t, 'call'); }),
      vscode.commands.registerCommand('toolsd.revertFrom', async (node?: Node) => { const t = await this.target(node); if (t) return this.changes.revert(t, 'from'); }),
      vscode.commands.registerCommand('toolsd.refreshHistory', () => this.refresh()),
      vscode.commands.registerCommand('toolsd.history.loadMore', (fd: FolderDaemon) => this.loadMore(fd)),
      vscode.commands.registerCommand('toolsd.openCall', (node?: Node) => this.openCall(node)),
      vscode.commands.registerCommand('toolsd.openFullOutput', (node?: Node) => this.openOutput(node)),
      vscode.workspace.registerTextDocumentContentProvider('toolsd-output', new OutputDocuments(manager)),
      vscode.workspace.registerTextDocumentContentProvider('toolsd-call', new CallDocuments(manager)),
      vscode.languages.registerDocumentLinkProvider({ scheme: 'toolsd-output' }, new NextPageLinks()),
      vscode.commands.registerCommand('toolsd.openCallJson', (node?: Node) => this.openCall(node, 'json')),
      onDidEndCall(() => this.refreshSoon()),
      manager.onDidChange(() => this.refreshSoon()),
    );
  }

  /** Coalesces bursts of call endings into one reload. */
  private refreshSoon(): void {
    if (this.refreshTimer) return;
    this.refreshTimer = setTimeout(() => { this.refreshTimer = undefined; void this.refresh(); }, 150);
  }

  /**
   * Reloads every daemon's calls and redraws the view when they changed. A redraw makes VS Code
   * forget the rows until it has asked for them again, and a context-menu command picked in that
   * moment gets no row (see target), so a reload that brings nothing new does not redraw.
   */
  async refresh(): Promise<void> {
    await Promise.all(this.manager.all().map(async (fd) => {
      if (fd.client.state !== 'running') { this.loaded.delete(fd); return; }
      const prev = this.loaded.get(fd);
      const want = Math.max(PAGE, prev?.calls.length ?? 0);
      try {
        const r = await fd.client.request<CallsListResult>(Methods.callsList, { limit: want });
        this.loaded.set(fd, { calls: r.calls ?? [], cursor: r.nextCursor });
      } catch (e) {
        this.loaded.set(fd, { calls: [], error: errText(e) });
      }
    }));
    this.redraw();
  }

  /** Redraws the view if what it shows changed. */
  private redraw(): void {
    let same = this.shown.size === this.loaded.size;
    for (const fd of [...this.shown.keys()]) if (!this.loaded.has(fd)) this.shown.delete(fd);
    for (const [fd, l] of this.loaded) {
      const key = JSON.stringify(l);
      if (this.shown.get(fd) !== key) { same = false; this.shown.set(fd, key); }
    }
    if (!same) this.changed.fire(undefined);
  }

  /**
   * What Show Changes and Revert act on. VS Code passes the row's node, or nothing when the view
   * was redrawn between the right-click and the pick: then the selected row, once the view has its
   * rows again, and if none a message rather than silence.
   */
  private async target(node?: Node): Promise<ChangesTarget | undefined> {
    for (let i = 0; !node && i < 20; i++) {
      node = this.view.selection.find((n) => n.kind === 'call' || n.kind === 'session');
      if (!node) await new Promise((r) => setTimeout(r, 50));
    }
    const t = target(node);
    if (!t) void vscode.window.showInformationMessage('toolsd: the Tool Calls view was updating as you picked; pick the call again.');
    return t;
  }

  private async loadMore(fd: FolderDaemon): Promise<void> {
    const l = this.loaded.get(fd);
    if (!l?.cursor) return;
    try {
      const r = await fd.client.request<CallsListResult>(Methods.callsList, { limit: PAGE, cursor: l.cursor });
      this.loaded.set(fd, { calls: [...l.calls, ...(r.calls ?? [])], cursor: r.nextCursor });
    } catch (e) {
      void vscode.window.showErrorMessage(`toolsd: calls/list failed: ${errText(e)}`);
    }
    this.redraw();
  }

  getChildren(node?: Node): Node[] {
    if (!node) {
      const out: Node[] = [];
      for (const fd of this.manager.all()) {
        const l = this.loaded.get(fd);
        if (!l) continue;
        if (l.error) { out.push({ kind: 'message', text: `calls/list failed: ${l.error}` }); continue; }
        const bySession = new Map<string, CallSummary[]>();
        for (const c of l.calls) (bySession.get(c.sessionID) ?? bySession.set(c.sessionID, []).get(c.sessionID)!).push(c);
        for (const [sessionID, calls] of bySession) out.push({ kind: 'session', fd, sessionID, calls });
        if (l.cursor) out.push({ kind: 'more', fd });
      }
      return out;
    }
    if (node.kind === 'session') return node.calls.map((call) => ({ kind: 'call', fd: node.fd, call }));
    if (node.kind === 'call' && node.call.truncated && node.call.outputID) return [{ kind: 'output', fd: node.fd, call: node.call }];
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    switch (node.kind) {
      case 'message': return new vscode.TreeItem(node.text);
      case 'more': {
        const it = new vscode.TreeItem('Load more…');
        it.command = { command: 'toolsd.history.loadMore', title: 'Load more', arguments: [node.fd] };
        it.iconPath = new vscode.ThemeIcon('ellipsis');
        return it;
      }
      case 'session': {
        const multi = this.manager.all().length > 1;
        const who = clientLabel(node.calls[0]?.client);
        const it = new vscode.TreeItem(who ? `${who}: session ${node.sessionID}` : `Session ${node.sessionID}`, vscode.TreeItemCollapsibleState.Expanded);
        it.id = `${node.fd.folder.uri}#session:${node.sessionID}`;
        it.description = `${node.calls.length} call${node.calls.length === 1 ? '' : 's'}${multi ? ` · ${node.fd.folder.name}` : ''}`;
        it.iconPath = new vscode.ThemeIcon('comment-discussion');
        it.contextValue = 'toolsd.session';
        return it;
      }
      case 'output': {
        const it = new vscode.TreeItem('Full output');
        it.id = `${node.fd.folder.uri}#output:${node.call.callID}`;
        it.description = 'truncated for the model';
        it.iconPath = new vscode.ThemeIcon('output');
        it.command = { command: 'toolsd.openFullOutput', title: 'Open Full Output', arguments: [node] };
        return it;
      }
      case 'call': {
        const c = node.call;
        const it = new vscode.TreeItem(c.title || c.tool,
          c.truncated && c.outputID ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
        it.id = `${node.fd.folder.uri}#call:${c.callID}`;
        const changed = c.changes ? `${c.changes} file${c.changes === 1 ? '' : 's'} changed` : '';
        it.description = [c.tool, clientLabel(c.client), duration(c), c.truncated ? 'truncated' : '', changed, c.confined ? '🛡 sandboxed' : ''].filter(Boolean).join(' · ');
        it.tooltip = `${c.tool} — ${c.status}${c.confined ? ' — ran in the OS sandbox' : ''}\ncall ${c.callID}${c.client ? `\nby ${c.client.name}${c.client.version ? ` ${c.client.version}` : ''}` : ''}\nstarted ${c.startedAt}${c.endedAt ? `\nended ${c.endedAt}` : ''}`;
        it.iconPath = statusIcon(c.status);
        // toolsd.call, then .truncated (a full output to open) and .changed (changes to show and revert).
        it.contextValue = 'toolsd.call' + (c.truncated && c.outputID ? '.truncated' : '') + (c.changes ? '.changed' : '');
        it.command = { command: 'toolsd.openCall', title: 'Open Call', arguments: [node] };
        return it;
      }
    }
  }

  /** Opens a call as a page (its rendered record), or as JSON. */
  private async openCall(node?: Node, as: 'page' | 'json' = 'page'): Promise<void> {
    if (!node || (node.kind !== 'call' && node.kind !== 'output')) return;
    const uri = callUri(node.fd, node.call.callID, as === 'json' ? 'json' : 'md');
    if (as === 'page') {
      try {
        await this.showPage(uri, node.call.title || node.call.tool);
      } catch (e) {
        void vscode.window.showErrorMessage(`toolsd: cannot open the call: ${errText(e)}`);
      }
      return;
    }
    await openLink(uri);
  }

  /** The call's page in a webview (one panel, reused), its links handled here. */
  private async showPage(uri: vscode.Uri, title: string): Promise<void> {
    const md = (await vscode.workspace.openTextDocument(uri)).getText();
    let body: string;
    try {
      body = await vscode.commands.executeCommand<string>('markdown.api.render', md);
    } catch {
      body = '';
    }
    if (!body) {
      // No markdown renderer (the built-in markdown extension is off): the page as text.
      await vscode.window.showTextDocument(await vscode.workspace.openTextDocument({ content: md, language: 'markdown' }), { preview: true });
      return;
    }
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel('toolsd.call', title, vscode.ViewColumn.Active, { enableScripts: true, enableFindWidget: true });
      this.panel.onDidDispose(() => { this.panel = undefined; });
      this.panel.webview.onDidReceiveMessage((m: { open?: string }) => {
        if (typeof m?.open === 'string') void openLink(vscode.Uri.parse(m.open)).catch((e) => vscode.window.showErrorMessage(`toolsd: ${errText(e)}`));
      });
    }
    this.panel.title = `Call: ${title}`;
    this.panel.webview.html = pageHTML(body, this.panel.webview.cspSource);
    this.panel.reveal(vscode.ViewColumn.Active);
  }

  private async openOutput(node?: Node): Promise<void> {
    if (!node || (node.kind !== 'call' && node.kind !== 'output') || !node.call.outputID) return;
    await vscode.window.showTextDocument(outputUri(node.fd, node.call.outputID, 0), { preview: true });
  }

  dispose(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.panel?.dispose();
    this.subs.forEach((s) => s.dispose());
    this.changed.dispose();
  }
}

/** Opens a link of a call's page: a rule's file at its line, a full output, the raw record, or
 * (through the system) a web address. */
async function openLink(uri: vscode.Uri): Promise<void> {
  switch (uri.scheme) {
    case 'file': {
      const m = /^L(\d+)(?:,(\d+))?$/.exec(uri.fragment);
      const doc = await vscode.workspace.openTextDocument(uri.with({ fragment: '' }));
      const at = m ? new vscode.Position(Number(m[1]) - 1, Math.max(0, Number(m[2] ?? 1) - 1)) : undefined;
      await vscode.window.showTextDocument(doc, { preview: true, selection: at ? new vscode.Range(at, at) : undefined });
      return;
    }
    case 'toolsd-output':
    case 'toolsd-call': {
      const doc = await vscode.workspace.openTextDocument(uri);
      if (uri.path.endsWith('.json')) await vscode.languages.setTextDocumentLanguage(doc, 'json');
      await vscode.window.showTextDocument(doc, { preview: true });
      return;
    }
    case 'http':
    case 'https':
      await vscode.env.openExternal(uri);
      return;
  }
}

/** The page's HTML: the rendered markdown, VS Code's colours, and a script that hands every
 * link click to the extension (a webview cannot open editors itself). */
function pageHTML(body: string, cspSource: string): string {
  const nonce = Array.from({ length: 24 }, () => Math.floor(Math.random() * 36).toString(36)).join('');
  return `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${cspSource} data:; style-src 'unsafe-inline'; script-src 'nonce-${nonce}';">
<style>
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 0 2em 2em; max-width: 60em; }
a { color: var(--vscode-textLink-foreground); }
code, pre { font-family: var(--vscode-editor-font-family); }
pre { background: var(--vscode-textCodeBlock-background); padding: .6em .8em; overflow-x: auto; }
:not(pre) > code { background: var(--vscode-textCodeBlock-background); padding: 0 .2em; }
h1, h2 { border-bottom: 1px solid var(--vscode-panel-border); }
</style></head><body>${body}
<script nonce="${nonce}">
const vscode = acquireVsCodeApi();
document.addEventListener('click', (e) => {
  const a = e.target.closest && e.target.closest('a');
  if (!a) return;
  e.preventDefault();
  vscode.postMessage({ open: a.getAttribute('href') });
});
</script></body></html>`;
}

/** toolsd-call:/<callID>.md (the page) or .json (the record). */
export function callUri(fd: FolderDaemon, callID: string, ext: 'md' | 'json'): vscode.Uri {
  return vscode.Uri.from({ scheme: 'toolsd-call', path: `/${callID}.${ext}`, query: fd.folder.uri.toString() });
}

/** What Show Changes and Revert act on, from a node of the view. */
function target(node?: Node): ChangesTarget | undefined {
  if (!node) return undefined;
  if (node.kind === 'call') {
    return { fd: node.fd, sessionID: node.call.sessionID, callID: node.call.callID, title: `call ${node.call.title || node.call.tool}` };
  }
  if (node.kind === 'session') {
    const oldest = node.calls[node.calls.length - 1];
    return { fd: node.fd, sessionID: node.sessionID, oldestCallID: oldest?.callID, title: `session ${node.sessionID}` };
  }
  return undefined;
}

export function outputUri(fd: FolderDaemon, outputID: string, offset: number): vscode.Uri {
  const q = new URLSearchParams({ folder: fd.folder.uri.toString(), offset: String(offset) });
  return vscode.Uri.from({ scheme: 'toolsd-output', path: `/${outputID}.log`, query: q.toString() });
}

function daemonFor(manager: DaemonManager, folderUri: string | null): FolderDaemon {
  const fd = manager.all().find((d) => d.folder.uri.toString() === folderUri) ?? manager.primary();
  if (!fd) throw new Error('no toolsd daemon runs for this window');
  return fd;
}

/** toolsd-output:/<outputID>.log?folder=…&offset=N — lines N… of a stored full output. */
class OutputDocuments implements vscode.TextDocumentContentProvider {
  constructor(private readonly manager: DaemonManager) {}
  async provideTextDocumentContent(uri: vscode.Uri, token: vscode.CancellationToken): Promise<string> {
    const q = new URLSearchParams(uri.query);
    const fd = daemonFor(this.manager, q.get('folder'));
    const outputID = uri.path.replace(/^\//, '').replace(/\.log$/, '');
    const start = Number(q.get('offset') ?? 0) || 0;
    let offset = start;
    let total = Infinity;
    const parts: string[] = [];
    while (offset < total && offset - start < DOC_LINES && !token.isCancellationRequested) {
      const r = await fd.client.request<OutputsReadResult>(Methods.outputsRead, {
        outputID, offset, limit: Math.min(READ_LINES, start + DOC_LINES - offset),
      });
      parts.push(r.content);
      total = r.totalLines;
      const got = r.lines ?? r.content.split('\n').length;
      if (got <= 0) break;
      offset += got;
    }
    let text = parts.join(parts.every((p) => p.endsWith('\n')) ? '' : '\n');
    if (offset < total) {
      const next = outputUri(fd, outputID, offset);
      text += `\n… ${total - offset} more lines; next page: ${next.toString(true)}\n`;
    }
    return text;
  }
}

/** Makes the "next page" line at the end of an output page a link. */
class NextPageLinks implements vscode.DocumentLinkProvider {
  provideDocumentLinks(doc: vscode.TextDocument): vscode.DocumentLink[] {
    const links: vscode.DocumentLink[] = [];
    const last = Math.max(0, doc.lineCount - 3);
    for (let i = last; i < doc.lineCount; i++) {
      const line = doc.lineAt(i).text;
      const m = /toolsd-output:\S+/.exec(line);
      if (m) links.push(new vscode.DocumentLink(new vscode.Range(i, m.index, i, m.index + m[0].length), vscode.Uri.parse(m[0])));
    }
    return links;
  }
}

/** toolsd-call:/<callID>.md?<folder> — a call's page; .json — its whole record. */
class CallDocuments implements vscode.TextDocumentContentProvider {
  constructor(private readonly manager: DaemonManager) {}
  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const fd = daemonFor(this.manager, uri.query || null);
    const page = uri.path.endsWith('.md');
    const callID = uri.path.replace(/^\//, '').replace(/\.(json|md)$/, '');
    const r = await fd.client.request<CallRecord>(Methods.callsGet, { callID });
    if (!page) return JSON.stringify(r, null, 2) + '\n';
    return renderRecord(r, {
      output: (id) => outputUri(fd, id, 0).toString(),
      file: (path, line, column) => vscode.Uri.file(path).with({ fragment: `L${line ?? 1},${column ?? 1}` }).toString(),
      raw: callUri(fd, callID, 'json').toString(),
    });
  }
}

function duration(c: CallSummary): string {
  if (!c.endedAt) return c.status === 'running' || c.status === 'pending' ? 'running' : '';
  const ms = Date.parse(c.endedAt) - Date.parse(c.startedAt);
  if (!(ms >= 0)) return '';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

function statusIcon(status: string): vscode.ThemeIcon {
  switch (status) {
    case 'completed': return new vscode.ThemeIcon('pass', new vscode.ThemeColor('testing.iconPassed'));
    case 'error': return new vscode.ThemeIcon('error', new vscode.ThemeColor('testing.iconFailed'));
    case 'cancelled': return new vscode.ThemeIcon('circle-slash');
    case 'interrupted': return new vscode.ThemeIcon('debug-disconnect');
    case 'running': return new vscode.ThemeIcon('sync~spin');
    default: return new vscode.ThemeIcon('clock');
  }
}
