// The "Running" view: calls in flight with their live title, and a shell call's output tail,
// fed by tools/progress — the calls of every client of the workspace, agents' included, each
// named by its client.

import * as vscode from 'vscode';
import { DaemonManager, FolderDaemon, clientLabel } from './manager';
import { Methods, ProgressParams } from './protocol';

const TAIL_LINES = 20;

interface RunningCall { fd: FolderDaemon; p: ProgressParams; since: number }
type Node = { kind: 'call'; call: RunningCall } | { kind: 'line'; text: string; id: string };

export class Progress implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly calls = new Map<string, RunningCall>();
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly ended = new vscode.EventEmitter<ProgressParams>();
  /** Fires when a call reaches an end state (completed, error, cancelled, interrupted). */
  readonly onDidEndCall = this.ended.event;
  private readonly view: vscode.TreeView<Node>;
  private readonly sub: vscode.Disposable;

  /** asks says whether a call waits for a person's answer; its event refreshes the view. */
  constructor(manager: DaemonManager, private readonly asks: { waiting(fd: FolderDaemon, callID: string): boolean; onDidChange: vscode.Event<void> }) {
    this.view = vscode.window.createTreeView('toolsd.running', { treeDataProvider: this });
    this.sub = asks.onDidChange(() => this.changed.fire(undefined));
    manager.forEach((fd) => [
      fd.client.onNotification<ProgressParams>(Methods.toolsProgress, (p) => this.update(fd, p)),
      fd.client.onDidChangeState((s) => { if (s !== 'running') this.dropDaemon(fd); }),
    ]);
  }

  private key(fd: FolderDaemon, callID: string): string { return `${fd.folder.uri}#${callID}`; }

  private update(fd: FolderDaemon, p: ProgressParams): void {
    const k = this.key(fd, p.callID);
    if (p.status === 'queued' || p.status === 'pending' || p.status === 'running') {
      const prev = this.calls.get(k);
      this.calls.set(k, { fd, p: { ...prev?.p, ...p, metadata: p.metadata ?? prev?.p.metadata }, since: prev?.since ?? Date.now() });
    } else {
      this.calls.delete(k);
      this.ended.fire(p);
    }
    this.view.badge = this.calls.size ? { value: this.calls.size, tooltip: `${this.calls.size} tool calls running` } : undefined;
    this.changed.fire(undefined);
  }

  private dropDaemon(fd: FolderDaemon): void {
    for (const [k, c] of this.calls) if (c.fd === fd) this.calls.delete(k);
    this.changed.fire(undefined);
  }

  getChildren(node?: Node): Node[] {
    if (!node) return [...this.calls.values()].map((call) => ({ kind: 'call', call }));
    if (node.kind !== 'call') return [];
    const out = node.call.p.metadata?.output;
    if (typeof out !== 'string' || out === '') return [];
    const lines = out.replace(/\n$/, '').split('\n').slice(-TAIL_LINES);
    return lines.map((text, i) => ({ kind: 'line', text, id: `${node.call.p.callID}:${i}` }));
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'line') {
      const it = new vscode.TreeItem(node.text || ' ');
      it.id = node.id;
      return it;
    }
    const { p } = node.call;
    const hasOutput = typeof p.metadata?.output === 'string' && p.metadata.output !== '';
    const it = new vscode.TreeItem(p.title || p.tool, hasOutput ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
    // A new id once output arrives: VS Code keeps an item's first collapsible state for its id.
    it.id = `${node.call.fd.folder.uri}#${p.callID}${hasOutput ? '#output' : ''}`;
    const waiting = this.asks.waiting(node.call.fd, p.callID);
    const who = clientLabel(p.client);
    it.description = [p.tool, who, waiting ? 'waiting for your answer' : p.status].filter(Boolean).join(' · ');
    it.tooltip = `${p.tool} ${p.callID} (session ${p.sessionID})${p.client ? `\nby ${p.client.name}${p.client.version ? ` ${p.client.version}` : ''}` : ''}`;
    it.iconPath = new vscode.ThemeIcon(waiting ? 'bell-dot' : p.status === 'queued' || p.status === 'pending' ? 'clock' : 'sync~spin');
    it.contextValue = 'toolsd.runningCall';
    return it;
  }

  dispose(): void {
    this.sub.dispose();
    this.view.dispose();
    this.changed.dispose();
    this.ended.dispose();
  }
}
