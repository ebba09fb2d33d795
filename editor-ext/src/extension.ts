// Activation only: builds the features, each in its own module, around one daemon per folder.

import * as vscode from 'vscode';
import { Asks } from './asks';
import { Diagnostics } from './diagnostics';
import { History } from './history';
import { DaemonManager } from './manager';
import { registerMcp } from './mcp';
import { Progress } from './progress';
import { Status } from './status';
import { registerTestCommand } from './testing';
import { Tools } from './tools';
import { registerTrust } from './trust';

let manager: DaemonManager | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('toolsd');
  manager = new DaemonManager(context, output);
  const asks = new Asks(manager, output);
  const progress = new Progress(manager, asks);
  context.subscriptions.push(
    output,
    asks,
    progress,
    new History(manager, progress.onDidEndCall),
    new Tools(manager),
    new Diagnostics(manager),
    new Status(manager, asks),
    ...registerTrust(manager, output),
    vscode.commands.registerCommand('toolsd.showLog', () => output.show(true)),
    vscode.commands.registerCommand('toolsd.showViews', () => vscode.commands.executeCommand('workbench.view.extension.toolsd')),
    vscode.commands.registerCommand('toolsd.restart', () => manager?.restartAll()),
  );
  const mcp = registerMcp(context, output);
  if (mcp) context.subscriptions.push(mcp);
  const test = registerTestCommand(manager);
  if (test) context.subscriptions.push(test);
  manager.start();
}

export async function deactivate(): Promise<void> {
  const m = manager;
  manager = undefined;
  await m?.dispose();
}
