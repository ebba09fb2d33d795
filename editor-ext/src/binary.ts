// Which toolsd binary the extension runs. It imports nothing from 'vscode', so its unit test
// (test/binary.test.ts) runs under plain node.

import * as fs from 'node:fs';
import * as path from 'node:path';

/** The daemon binary's file name on a platform: toolsd.exe on Windows, toolsd elsewhere. */
export function binaryName(platform: NodeJS.Platform): string {
  return platform === 'win32' ? 'toolsd.exe' : 'toolsd';
}

export interface BinaryLookup {
  /** The toolsd.path setting; empty or unset when the user has not set it. */
  configured?: string;
  /** The extension's install folder: a platform-specific vsix carries its toolsd in bin/. */
  extensionPath: string;
  /** The platform the extension host runs on (default process.platform). */
  platform?: NodeJS.Platform;
  /** Whether a file exists (default fs.existsSync). */
  exists?: (p: string) => boolean;
}

/**
 * Where the daemon binary is: the toolsd.path setting when set, else the binary bundled in the
 * extension's bin/ folder (bin/toolsd, bin/toolsd.exe on Windows), else `toolsd`, which the
 * spawn looks up on PATH.
 */
export function findBinary(o: BinaryLookup): string {
  if (o.configured) return o.configured;
  const platform = o.platform ?? process.platform;
  const p = platform === 'win32' ? path.win32 : path.posix;
  const bundled = p.join(o.extensionPath, 'bin', binaryName(platform));
  if ((o.exists ?? fs.existsSync)(bundled)) return bundled;
  return 'toolsd';
}
