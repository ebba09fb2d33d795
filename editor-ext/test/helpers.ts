import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DaemonClient, DaemonState } from '../src/client';

/** The editor-ext folder (tests run from out/test). */
export const extRoot = path.resolve(__dirname, '..', '..');
export const fakeDaemon = path.join(extRoot, 'test', 'fake-daemon.js');

/** The real daemon: $TOOLSD_BIN, else <repo>/bin/toolsd as scripts/test.sh builds it. */
export function realDaemon(): string {
  const bin = process.env.TOOLSD_BIN || path.resolve(extRoot, '..', 'bin', 'toolsd');
  if (!fs.existsSync(bin)) {
    throw new Error(`the real toolsd binary is missing at ${bin}: build it with "CGO_ENABLED=0 go build -o bin/toolsd ./cmd/toolsd" from the repo root, or set TOOLSD_BIN`);
  }
  return bin;
}

export function tempWorkspace(files: Record<string, string> = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolsd-ext-test-'));
  for (const [name, body] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), body);
  }
  return dir;
}

/** Resolves when the client reaches the state (or is already in it); rejects after ms. */
export function waitForState(client: DaemonClient, want: DaemonState, ms = 10_000): Promise<void> {
  if (client.state === want) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => { sub.dispose(); reject(new Error(`state ${want} not reached within ${ms} ms (now ${client.state})`)); }, ms);
    const sub = client.onDidChangeState((s) => {
      if (s === want) { clearTimeout(t); sub.dispose(); resolve(); }
    });
  });
}

/** Resolves with the next notification of a method that satisfies pred. */
export function nextNotification<P>(client: DaemonClient, method: string, pred: (p: P) => boolean = () => true, ms = 10_000): Promise<P> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => { sub.dispose(); reject(new Error(`no ${method} within ${ms} ms`)); }, ms);
    const sub = client.onNotification<P>(method, (p) => {
      if (pred(p)) { clearTimeout(t); sub.dispose(); resolve(p); }
    });
  });
}
