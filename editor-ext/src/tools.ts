// The "Tools" view: the catalogue each daemon offers, grouped by source (builtin, project, mcp:…).

import * as vscode from 'vscode';
import { DaemonManager } from './manager';
import { ToolInfo } from './protocol';

type Node = { kind: 'source'; source: string; tools: ToolInfo[] } | { kind: 'tool'; tool: ToolInfo };

export class Tools implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subs: vscode.Disposable[];

  constructor(private readonly manager: DaemonManager) {
    this.subs = [
      vscode.window.createTreeView('toolsd.tools', { treeDataProvider: this }),
      manager.onDidChange(() => this.changed.fire(undefined)),
    ];
  }

  getChildren(node?: Node): Node[] {
    if (node) return node.kind === 'source' ? node.tools.map((tool) => ({ kind: 'tool', tool })) : [];
    const bySource = new Map<string, ToolInfo[]>();
    for (const fd of this.manager.all()) for (const t of fd.tools) (bySource.get(t.source) ?? bySource.set(t.source, []).get(t.source)!).push(t);
    // Project tools first, then MCP servers, then the built-ins (collapsed: they are always there).
    const rank = (s: string) => (s === 'project' ? 0 : s === 'builtin' ? 2 : 1);
    return [...bySource]
      .sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b))
      .map(([source, tools]) => ({ kind: 'source', source, tools }));
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'source') {
      const it = new vscode.TreeItem(node.source,
        node.source === 'builtin' ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.Expanded);
      it.id = `source:${node.source}`;
      it.description = `${node.tools.length}`;
      it.iconPath = new vscode.ThemeIcon(node.source === 'builtin' ? 'package' : node.source === 'project' ? 'folder' : 'plug');
      return it;
    }
    const it = new vscode.TreeItem(node.tool.id);
    it.id = `tool:${node.tool.source}:${node.tool.id}`;
    it.description = node.tool.description.split('\n')[0].slice(0, 120);
    it.tooltip = new vscode.MarkdownString(node.tool.description);
    it.iconPath = new vscode.ThemeIcon('tools');
    return it;
  }

  dispose(): void {
    this.subs.forEach((s) => s.dispose());
    this.changed.dispose();
  }
}
