// Which `toolsd.*` settings belong to the extension itself rather than to the daemon (no 'vscode'
// import: test/settings.test.ts reads it too).

/** Settings of the extension itself, never sent to the daemon as initializationOptions. */
export const EXTENSION_ONLY: ReadonlySet<string> = new Set(['path', 'args', 'registerMcpServer']);
