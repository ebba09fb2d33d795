// Reading the extension's settings: which binary to spawn and how, and the daemon settings that
// travel as initializationOptions. The daemon settings are the `toolsd.*` properties of
// contributes.configuration that are not listed in EXTENSION_ONLY; test/settings.test.ts keeps
// them in step with config/settings.schema.json (the daemon's settings struct).

import * as vscode from 'vscode';
import { findBinary } from './binary';
import { SpawnSpec } from './client';
import { EXTENSION_ONLY } from './settingsKeys';


/** Settings whose change needs a new daemon process (all of them: initializationOptions are read once). */
export function affectsDaemon(e: vscode.ConfigurationChangeEvent): boolean {
  return e.affectsConfiguration('toolsd');
}

/**
 * The daemon's settings as the user set them. They are contributed with scope "machine", so VS Code
 * takes them from the user's (or the remote machine's) settings only, never from a workspace: a
 * workspace must not loosen its own rules. Only values set explicitly are sent; the daemon keeps its
 * defaults for the rest.
 */
export function daemonSettings(packageJSON: any): Record<string, unknown> {
  const props: Record<string, unknown> = packageJSON?.contributes?.configuration?.properties ?? {};
  const cfg = vscode.workspace.getConfiguration('toolsd');
  const out: Record<string, unknown> = {};
  for (const full of Object.keys(props)) {
    const key = full.replace(/^toolsd\./, '');
    if (EXTENSION_ONLY.has(key)) continue;
    const i = cfg.inspect(key);
    if (i && (i.globalValue !== undefined || (i as any).globalRemoteValue !== undefined || (i as any).globalLocalValue !== undefined)) {
      out[key] = cfg.get(key);
    }
  }
  return out;
}

/** The daemon binary to run: toolsd.path, else the one the extension bundles, else `toolsd` on PATH. */
export function resolveBinary(extensionPath: string): string {
  return findBinary({ configured: vscode.workspace.getConfiguration('toolsd').get<string>('path'), extensionPath });
}

export function spawnSpec(extensionPath: string, folder: string): SpawnSpec {
  const cfg = vscode.workspace.getConfiguration('toolsd');
  const args = [...(cfg.get<string[]>('args') ?? [])];
  // logLevel is a daemon setting (sent with the others); as a flag it also covers the daemon's start.
  const level = cfg.inspect<string>('logLevel');
  const set = level?.globalValue ?? (level as any)?.globalRemoteValue ?? (level as any)?.globalLocalValue;
  if (typeof set === 'string' && set) args.push('--log-level', set);
  return { command: resolveBinary(extensionPath), args, cwd: folder };
}
