// toolsd.test.execute: issues tools/execute as an agent would, for the end-to-end tests. Registered
// only when the extension host runs with TOOLSD_EXTENSION_TEST=1.
//
// Arguments: {tool, args, sessionID?, callID?, messageID?, agent?, model?, resultFile?} or {request: "<path of a
// JSON file holding those>"} (how a keybinding in the tests passes them). Returns the
// ExecuteResult; with resultFile, also writes it there (or {rpcError} when the request failed).

import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { errText } from './client';
import { DaemonManager } from './manager';
import { ExecuteResult, Methods } from './protocol';

interface TestExecute {
  tool: string; args: unknown; sessionID?: string; callID?: string; messageID?: string;
  agent?: string; model?: { providerID: string; modelID: string }; resultFile?: string;
}

let counter = 0;

export function registerTestCommand(manager: DaemonManager): vscode.Disposable | undefined {
  if (process.env.TOOLSD_EXTENSION_TEST !== '1') return undefined;
  return vscode.commands.registerCommand('toolsd.test.execute', async (input: TestExecute | { request: string }) => {
    const req: TestExecute = 'request' in input ? JSON.parse(fs.readFileSync(input.request, 'utf8')) : input;
    const fd = manager.primary();
    const write = (v: unknown) => { if (req.resultFile) fs.writeFileSync(req.resultFile, JSON.stringify(v, null, 2) + '\n'); };
    try {
      if (!fd) throw new Error('no toolsd daemon in this window');
      const n = ++counter;
      const result = await fd.client.request<ExecuteResult>(Methods.toolsExecute, {
        sessionID: req.sessionID ?? 'e2e', messageID: req.messageID ?? `msg-${n}`, callID: req.callID ?? `call-${Date.now()}-${n}`,
        tool: req.tool, args: req.args, ...(req.agent ? { agent: req.agent } : {}), ...(req.model ? { model: req.model } : {}),
      });
      write(result);
      return result;
    } catch (e: any) {
      write({ rpcError: { code: e?.code, message: errText(e) } });
      throw e;
    }
  });
}
