// The status bar item: the daemon's state, the number of tools, of agents attached to the
// workspace's daemon and of pending asks. A click opens the log (the output channel with the
// daemon's stderr).

import * as vscode from 'vscode';
import { DaemonState } from './client';
import { DaemonManager } from './manager';

export class Status implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('toolsd.status', vscode.StatusBarAlignment.Left, 10);
  /** Shown while asks wait; a click lists them (a notification that was dismissed or hid is still there). */
  private readonly asksItem = vscode.window.createStatusBarItem('toolsd.asks', vscode.StatusBarAlignment.Left, 9);
  private readonly subs: vscode.Disposable[] = [];

  constructor(private readonly manager: DaemonManager, private readonly pendingAsks: { count(): number; onDidChange: vscode.Event<void> }) {
    this.item.name = 'toolsd';
    this.item.command = 'toolsd.showLog';
    this.asksItem.name = 'toolsd asks';
    this.asksItem.command = 'toolsd.showPendingAsks';
    this.asksItem.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
    this.subs.push(manager.onDidChange(() => this.render()), pendingAsks.onDidChange(() => this.render()));
    this.render();
    this.item.show();
  }

  private render(): void {
    const all = this.manager.all();
    if (all.length === 0) {
      this.asksItem.hide();
      this.item.text = '$(tools) toolsd: no folder';
      this.item.tooltip = 'toolsd runs for each workspace folder; open a folder to start it.';
      return;
    }
    const worst = worstState(all.map((fd) => fd.client.state));
    const tools = all.filter((fd) => fd.client.state === 'running').reduce((n, fd) => n + fd.tools.length, 0);
    const agents = all.filter((fd) => fd.client.state === 'running').flatMap((fd) => fd.agents());
    const attached = agents.length ? ` · ${agents.length} agent${agents.length === 1 ? '' : 's'} attached` : '';
    const asks = this.pendingAsks.count();
    if (asks) {
      this.asksItem.text = `$(bell-dot) ${asks} ask${asks === 1 ? '' : 's'}`;
      this.asksItem.tooltip = 'toolsd: tool calls wait for your answer. Click to see them.';
      this.asksItem.show();
    } else {
      this.asksItem.hide();
    }
    switch (worst) {
      case 'running':
        // Until every running daemon has answered tools/resolve, a count would be a guess.
        this.item.text = all.every((fd) => fd.client.state !== 'running' || fd.resolved)
          ? `$(tools) toolsd: ${tools} tools${attached}`
          : '$(sync~spin) toolsd: loading tools';
        break;
      case 'starting': this.item.text = '$(sync~spin) toolsd: starting'; break;
      case 'restarting': this.item.text = '$(sync~spin) toolsd: restarting'; break;
      case 'failed': this.item.text = '$(error) toolsd: failed'; break;
      case 'stopped': this.item.text = '$(circle-slash) toolsd: stopped'; break;
      case 'stopping': this.item.text = '$(sync~spin) toolsd: stopping'; break;
    }
    this.item.backgroundColor = worst === 'failed' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
    const lines = all.map((fd) => {
      const r = fd.client.initializeResult;
      const v = r ? ` ${r.serverInfo.version}` : '';
      const err = fd.client.lastError && fd.client.state !== 'running' ? ` — ${fd.client.lastError.message}` : '';
      const names = fd.agents().map((a) => a.name);
      return `${fd.folder.name}: toolsd${v} ${fd.client.state}, ${fd.tools.length} tools${names.length ? `, agents: ${names.join(', ')}` : ''}${err}`;
    });
    if (asks) lines.push(`${asks} ask${asks === 1 ? '' : 's'} waiting (toolsd: Show Pending Asks)`);
    lines.push('Click to open the log.');
    this.item.tooltip = lines.join('\n');
  }

  dispose(): void {
    this.subs.forEach((s) => s.dispose());
    this.item.dispose();
    this.asksItem.dispose();
  }
}

const ORDER: DaemonState[] = ['failed', 'restarting', 'starting', 'stopping', 'stopped', 'running'];
function worstState(states: DaemonState[]): DaemonState {
  for (const s of ORDER) if (states.includes(s)) return s;
  return 'stopped';
}
