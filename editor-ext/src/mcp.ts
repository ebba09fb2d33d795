// Offers toolsd to VS Code's own agent (Copilot agent mode) as an MCP server definition that runs
// `toolsd mcp` over stdio for the first workspace folder. Registered only where the editor has the
// API (VS Code 1.101+; code-server and other hosts may lack it), and only while toolsd.registerMcpServer is on (the default).

import * as vscode from 'vscode';
import { resolveBinary } from './settings';

export function registerMcp(context: vscode.ExtensionContext, output: vscode.OutputChannel): vscode.Disposable | undefined {
  const lm = (vscode as any).lm;
  const Definition = (vscode as any).McpStdioServerDefinition;
  if (typeof lm?.registerMcpServerDefinitionProvider !== 'function' || typeof Definition !== 'function') {
    output.appendLine('[extension] this editor has no MCP server definition API; toolsd is not offered to its agent');
    return undefined;
  }
  const changed = new vscode.EventEmitter<void>();
  const sub = vscode.workspace.onDidChangeConfiguration((e) => { if (e.affectsConfiguration('toolsd')) changed.fire(); });
  const provider = {
    onDidChangeMcpServerDefinitions: changed.event,
    provideMcpServerDefinitions: () => {
      if (!vscode.workspace.getConfiguration('toolsd').get<boolean>('registerMcpServer', true)) return [];
      const folder = vscode.workspace.workspaceFolders?.[0];
      if (!folder || folder.uri.scheme !== 'file') return [];
      const def = new Definition('toolsd', resolveBinary(context.extensionPath), ['mcp', '--workspace', folder.uri.fsPath], {},
        context.extension.packageJSON.version);
      def.cwd = folder.uri;
      return [def];
    },
  };
  const reg: vscode.Disposable = lm.registerMcpServerDefinitionProvider('toolsd.mcp', provider);
  return vscode.Disposable.from(reg, sub, changed);
}
