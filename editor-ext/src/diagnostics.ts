// Problems from the daemon: tool definition and config files that failed to load
// (tools/resolve and tools/changed diagnostics) shown in the Problems panel on those files.

import * as vscode from 'vscode';
import { DaemonManager, FolderDaemon } from './manager';
import { Diagnostic } from './protocol';

export class Diagnostics implements vscode.Disposable {
  private readonly collection = vscode.languages.createDiagnosticCollection('toolsd');
  private readonly sub: vscode.Disposable;

  constructor(private readonly manager: DaemonManager) {
    this.sub = manager.onDidChange(() => this.update());
  }

  private update(): void {
    const byFile = new Map<string, vscode.Diagnostic[]>();
    for (const fd of this.manager.all()) {
      if (fd.client.state !== 'running') continue;
      for (const d of fd.diagnostics) {
        const file = resolvePath(fd, d.path);
        (byFile.get(file) ?? byFile.set(file, []).get(file)!).push(toVscode(d));
      }
    }
    this.collection.clear();
    for (const [file, diags] of byFile) this.collection.set(vscode.Uri.file(file), diags);
  }

  dispose(): void {
    this.sub.dispose();
    this.collection.dispose();
  }
}

function resolvePath(fd: FolderDaemon, p: string): string {
  return p.startsWith('/') ? p : vscode.Uri.joinPath(fd.folder.uri, p).fsPath;
}

function toVscode(d: Diagnostic): vscode.Diagnostic {
  const line = Math.max((d.line ?? 1) - 1, 0);
  const col = Math.max((d.column ?? 1) - 1, 0);
  const range = d.line ? new vscode.Range(line, col, line, Number.MAX_SAFE_INTEGER) : new vscode.Range(0, 0, 0, Number.MAX_SAFE_INTEGER);
  const diag = new vscode.Diagnostic(range, d.message, d.severity === 'warning' ? vscode.DiagnosticSeverity.Warning : vscode.DiagnosticSeverity.Error);
  diag.source = 'toolsd';
  return diag;
}
