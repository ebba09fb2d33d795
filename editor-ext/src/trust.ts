// Workspace trust: the daemon honours the workspace's own config (.toolsd/) only once the person
// trusts the workspace, and remembers that in its store. VS Code's trust is passed on when the
// daemon starts and when it is granted; the command toolsd.trustWorkspace grants it to toolsd alone
// (for a window in restricted mode). The extension never revokes on its own: an untrusted window
// leaves the daemon's remembered answer as it is.

import * as vscode from 'vscode';
import { errText } from './client';
import { DaemonManager, FolderDaemon } from './manager';
import { Methods, TrustResult } from './protocol';

export function registerTrust(manager: DaemonManager, output: vscode.OutputChannel): vscode.Disposable[] {
  const send = async (fd: FolderDaemon, trusted: boolean) => {
    try {
      await fd.client.request<TrustResult>(Methods.permissionTrust, { trusted });
      output.appendLine(`[extension] ${fd.folder.name}: workspace ${trusted ? 'trusted' : 'not trusted'}`);
    } catch (e) {
      output.appendLine(`[extension] permission/trust failed: ${errText(e)}`);
    }
  };
  manager.forEach((fd) => [
    fd.client.onDidStart(() => { if (vscode.workspace.isTrusted) void send(fd, true); }),
  ]);
  return [
    vscode.workspace.onDidGrantWorkspaceTrust(() => { for (const fd of manager.all()) if (fd.client.state === 'running') void send(fd, true); }),
    vscode.commands.registerCommand('toolsd.trustWorkspace', async () => {
      const fd = manager.primary();
      if (!fd) return;
      const ok = await vscode.window.showWarningMessage(
        `Trust the toolsd config of ${fd.folder.name}?`,
        { modal: true, detail: 'Its .toolsd/ tools and permission rules will be used. Only do this for a project you trust.' },
        'Trust');
      if (ok !== 'Trust') return;
      await send(fd, true);
    }),
    vscode.commands.registerCommand('toolsd.untrustWorkspace', async () => {
      const fd = manager.primary();
      if (fd) await send(fd, false);
    }),
  ];
}
