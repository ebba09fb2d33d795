// Warnings about the daemon itself that come with a fix (a diagnostic with `fix`, such as
// the checkpoints' inotify limit): shown once as a notification, again only after they
// cleared and came back. No vscode import, so that it is unit-tested.

import { Diagnostic } from './protocol';

export interface FolderDiagnostic { folder: string; d: Diagnostic }

/** The diagnostics with a fix that were not shown yet, and the set of those shown now. */
export function newWarnings(shown: ReadonlySet<string>, current: FolderDiagnostic[]): { show: FolderDiagnostic[]; shown: Set<string> } {
  const next = new Set<string>();
  const show: FolderDiagnostic[] = [];
  for (const fd of current) {
    if (!fd.d.fix) continue;
    const key = `${fd.folder}\u0000${fd.d.path}\u0000${fd.d.fix}`;
    if (next.has(key)) continue;
    next.add(key);
    if (!shown.has(key)) show.push(fd);
  }
  return { show, shown: next };
}

/** The notification's text: the folder (when there are several), the message, the command. */
export function warningText(fd: FolderDiagnostic, folders: number): string {
  const where = folders > 1 ? `${fd.folder}: ` : '';
  return `toolsd: ${where}${fd.d.message} To fix it, run: ${fd.d.fix}`;
}
