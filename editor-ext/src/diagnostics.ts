// Problems from the daemon: tool definition and config files that failed to load
// (tools/resolve and tools/changed diagnostics) shown in the Problems panel on those files;
// those that come with a fix (the checkpoints' inotify limit) also as a warning notification
// with a button that copies the command.

import * as vscode from 'vscode';
import { DaemonManager, FolderDaemon } from './manager';
import { Diagnostic } from './protocol';
import { FolderDiagnostic, newWarnings, warningText } from './warnings';

export class Diagnostics implements vscode.Disposable {
  private readonly collection = vscode.languages.createDiagnosticCollection('toolsd');
  private readonly sub: vscode.Disposable;
  private shown = new Set<string>();

  constructor(private readonly manager: DaemonManager) {
    this.sub = manager.onDidChange(() => this.update());
  }

  private update(): void {
    const byFile = new Map<string, vscode.Diagnostic[]>();
    const withFix: FolderDiagnostic[] = [];
    const running = this.manager.all().filter((fd) => fd.client.state === 'running');
    for (const fd of running) {
      for (const d of fd.diagnostics) {
        withFix.push({ folder: fd.folder.name, d });
        const file = resolvePath(fd, d.path);
        (byFile.get(file) ?? byFile.set(file, []).get(file)!).push(toVscode(d));
      }
    }
    this.collection.clear();
    for (const [file, diags] of byFile) this.collection.set(vscode.Uri.file(file), diags);
    const w = newWarnings(this.shown, withFix);
    this.shown = w.shown;
    for (const x of w.show) {
      const copy = 'Copy the command';
      void vscode.window.showWarningMessage(warningText(x, running.length), copy).then((pick) => {
        if (pick === copy && x.d.fix) void vscode.env.clipboard.writeText(x.d.fix);
      });
    }
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
