// One DaemonClient per workspace folder, built from the settings, restarted when they change, and
// the catalogue (tools/resolve) each daemon currently offers.

import * as vscode from 'vscode';
import { DaemonClient, errText } from './client';
import { ChangedParams, ClientRef, ClientsParams, Methods, ResolveResult, ToolInfo } from './protocol';
import { affectsDaemon, daemonSettings, spawnSpec } from './settings';

/** The session id under which the extension's own UI resolves the catalogue. */
export const UI_SESSION = 'vscode';

/** A workspace folder's daemon and what it last reported. */
export class FolderDaemon {
  tools: ToolInfo[] = [];
  /** Whether the catalogue of the running daemon has been resolved yet. */
  resolved = false;
  diagnostics: ResolveResult['diagnostics'] = [];
  /** The clients attached to the folder's daemon (this window among them), from clients/changed. */
  clients: ClientRef[] = [];
  constructor(readonly folder: vscode.WorkspaceFolder, readonly client: DaemonClient) {}

  /** The agents (MCP clients) attached to the folder's daemon. */
  agents(): ClientRef[] { return this.clients.filter((c) => c.kind === 'mcp'); }
}

/** How a call's client is named in the views and asks: agents by name, editors not at all. */
export function clientLabel(c: ClientRef | undefined): string | undefined {
  return c && c.kind === 'mcp' ? c.name : undefined;
}

/**
 * DaemonManager keeps the folders' daemons. Features attach to each daemon with forEach, which
 * calls back for the daemons there are and those to come, and disposes what the callback returned
 * when the folder goes away. Used from the extension host's single thread only.
 */
export class DaemonManager implements vscode.Disposable {
  private readonly daemons = new Map<string, { fd: FolderDaemon; subs: vscode.Disposable[] }>();
  private readonly attachers: ((fd: FolderDaemon) => vscode.Disposable[] | void)[] = [];
  private readonly changed = new vscode.EventEmitter<FolderDaemon | undefined>();
  /** Fires when a daemon's state or catalogue changed, or the set of daemons changed (undefined). */
  readonly onDidChange = this.changed.event;
  private readonly subs: vscode.Disposable[] = [];

  constructor(private readonly context: vscode.ExtensionContext, private readonly output: vscode.OutputChannel) {
    this.subs.push(
      vscode.workspace.onDidChangeWorkspaceFolders((e) => {
        for (const f of e.removed) void this.remove(f);
        for (const f of e.added) this.add(f);
      }),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (!affectsDaemon(e)) return;
        this.output.appendLine('[extension] toolsd settings changed; restarting the daemon');
        void this.restartAll();
      }),
    );
  }

  start(): void {
    for (const f of vscode.workspace.workspaceFolders ?? []) this.add(f);
  }

  all(): FolderDaemon[] { return [...this.daemons.values()].map((d) => d.fd); }

  /** The daemon of the active editor's folder, else the first. */
  primary(): FolderDaemon | undefined {
    const uri = vscode.window.activeTextEditor?.document.uri;
    const f = uri && vscode.workspace.getWorkspaceFolder(uri);
    return (f && this.daemons.get(f.uri.toString())?.fd) ?? this.all()[0];
  }

  forEach(attach: (fd: FolderDaemon) => vscode.Disposable[] | void): void {
    this.attachers.push(attach);
    for (const d of this.daemons.values()) d.subs.push(...(attach(d.fd) ?? []));
  }

  async restartAll(): Promise<void> {
    await Promise.all(this.all().map(async (fd) => {
      fd.client.setOptions(this.options(fd.folder));
      await fd.client.restart().catch((e) => this.output.appendLine(`[extension] restart failed: ${errText(e)}`));
    }));
  }

  private options(folder: vscode.WorkspaceFolder) {
    const pkg = this.context.extension.packageJSON;
    return {
      spawn: spawnSpec(this.context.extensionPath, folder.uri.fsPath),
      workspaceFolder: folder.uri.fsPath,
      initializationOptions: daemonSettings(pkg),
      clientInfo: { name: `${vscode.env.appName} toolsd extension`, version: pkg.version as string },
      capabilities: { ask: true, progress: true },
      log: (line: string) => this.output.appendLine(this.daemons.size > 1 ? `[${folder.name}] ${line}` : line),
    };
  }

  private add(folder: vscode.WorkspaceFolder): void {
    if (folder.uri.scheme !== 'file' || this.daemons.has(folder.uri.toString())) return;
    const client = new DaemonClient(this.options(folder));
    const fd = new FolderDaemon(folder, client);
    const entry = { fd, subs: [] as vscode.Disposable[] };
    this.daemons.set(folder.uri.toString(), entry);
    const resolve = async () => {
      try {
        const r = await client.request<ResolveResult>(Methods.toolsResolve, { sessionID: UI_SESSION });
        fd.tools = r.tools ?? [];
        fd.diagnostics = r.diagnostics ?? [];
        fd.resolved = true;
      } catch (e) {
        this.output.appendLine(`[extension] tools/resolve failed: ${errText(e)}`);
      }
      this.changed.fire(fd);
    };
    const listClients = async () => {
      try {
        const r = await client.request<ClientsParams>(Methods.clientsList, {});
        fd.clients = r.clients ?? [];
      } catch (e) {
        this.output.appendLine(`[extension] clients/list failed: ${errText(e)}`);
      }
      this.changed.fire(fd);
    };
    entry.subs.push(
      client.onDidChangeState((s) => {
        if (s !== 'running') { fd.tools = []; fd.resolved = false; fd.clients = []; }
        this.changed.fire(fd);
      }),
      client.onDidStart(() => { void resolve(); void listClients(); }),
      client.onNotification<ClientsParams>(Methods.clientsChanged, (p) => {
        fd.clients = p.clients ?? [];
        this.changed.fire(fd);
      }),
      client.onNotification<ChangedParams>(Methods.toolsChanged, (p) => {
        fd.diagnostics = p.diagnostics ?? fd.diagnostics;
        this.changed.fire(fd);
        void resolve();
      }),
    );
    for (const a of this.attachers) entry.subs.push(...(a(fd) ?? []));
    this.changed.fire(undefined);
    client.start().catch((e) => {
      this.output.appendLine(`[extension] toolsd did not start for ${folder.name}: ${errText(e)}`);
      void vscode.window.showErrorMessage(`toolsd did not start: ${errText(e)}`, 'Show Log').then((c) => { if (c) this.output.show(); });
    });
  }

  private async remove(folder: vscode.WorkspaceFolder): Promise<void> {
    const entry = this.daemons.get(folder.uri.toString());
    if (!entry) return;
    this.daemons.delete(folder.uri.toString());
    entry.subs.forEach((s) => s.dispose());
    this.changed.fire(undefined);
    await entry.fd.client.dispose();
  }

  async dispose(): Promise<void> {
    this.subs.forEach((s) => s.dispose());
    const all = [...this.daemons.values()];
    this.daemons.clear();
    all.forEach((e) => e.subs.forEach((s) => s.dispose()));
    await Promise.all(all.map((e) => e.fd.client.dispose()));
    this.changed.dispose();
  }
}
