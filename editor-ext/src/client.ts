// The toolsd client core: spawns the daemon, initializes it, restarts it after crashes and stops it.
// It imports nothing from 'vscode', so the unit tests run it under plain node against the real
// daemon binary; the extension wraps it (src/extension.ts).

import * as cp from 'node:child_process';
import * as readline from 'node:readline';
import {
  CancellationToken,
  MessageConnection,
  ResponseError,
  createMessageConnection,
} from 'vscode-jsonrpc/node';
import { StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { ClientCapabilities, ErrorCodes, InitializeParams, InitializeResult, Methods } from './protocol';

export type DaemonState = 'stopped' | 'starting' | 'running' | 'stopping' | 'restarting' | 'failed';

/** How to start the daemon process. */
export interface SpawnSpec {
  command: string;
  args?: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

export interface RestartPolicy {
  /** Crashes tolerated within windowMs before giving up (default 3). */
  maxRestarts?: number;
  /** Window in which crashes are counted (default 180 s). */
  windowMs?: number;
  /** First backoff; doubles per crash in the window (default 500 ms). */
  backoffMs?: number;
  /** Backoff cap (default 5 s). */
  maxBackoffMs?: number;
}

export interface DaemonClientOptions {
  spawn: SpawnSpec;
  workspaceFolder: string;
  initializationOptions?: unknown;
  clientInfo?: { name: string; version?: string };
  capabilities?: ClientCapabilities;
  restart?: RestartPolicy;
  /** Budget for shutdown → exit → kill (default 3 s). */
  stopTimeoutMs?: number;
  /** How long initialize may take before the start counts as failed (default 15 s). */
  initializeTimeoutMs?: number;
  /** Receives the daemon's stderr lines and the client's own log lines. Called synchronously. */
  log?: (line: string) => void;
}

export interface Disposable { dispose(): void }

type Listener<T> = (value: T) => void;

/** A minimal event emitter (the 'vscode' one is not available outside the editor). */
export class Emitter<T> {
  private listeners = new Set<Listener<T>>();
  readonly event = (listener: Listener<T>): Disposable => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };
  fire(value: T): void {
    for (const l of [...this.listeners]) {
      try { l(value); } catch { /* a listener's fault is its own */ }
    }
  }
  dispose(): void { this.listeners.clear(); }
}

/** The daemon is not running (stopped, failed or between restarts). */
export class NotRunningError extends Error {
  constructor(state: DaemonState) { super(`toolsd is not running (state: ${state})`); this.name = 'NotRunningError'; }
}

/** The daemon could not be started or did not initialize; such a start is never retried on its own. */
export class StartError extends Error {
  constructor(message: string, readonly code?: number) { super(message); this.name = 'StartError'; }
}

interface Running {
  child: cp.ChildProcess;
  conn: MessageConnection;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  hasExited: boolean;
  stopping: boolean;
}

/**
 * DaemonClient owns one toolsd process for one workspace folder.
 *
 * start, stop and restart are serialised: each waits for the one before it. Notifications from the
 * daemon reach handlers registered with onNotification across restarts. A crash of a daemon that
 * had initialized is followed by a restart after a backoff, at most maxRestarts times within the
 * window; a failed start (spawn error, initialize error or an exit before initialize answered) is
 * never retried on its own. Not safe to share across threads (there are none in node).
 */
export class DaemonClient {
  private _state: DaemonState = 'stopped';
  private running: Running | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private crashes: number[] = [];
  private restartTimer: NodeJS.Timeout | undefined;
  private disposed = false;
  private readonly notificationHandlers = new Map<string, Set<(params: any) => void>>();

  private readonly stateEmitter = new Emitter<DaemonState>();
  private readonly startEmitter = new Emitter<InitializeResult>();
  /** Fires on every state change. */
  readonly onDidChangeState = this.stateEmitter.event;
  /** Fires after each successful initialize (the first start and every restart). */
  readonly onDidStart = this.startEmitter.event;

  /** The last initialize result, the last error, and how many automatic restarts have happened. */
  initializeResult: InitializeResult | undefined;
  lastError: Error | undefined;
  restarts = 0;

  constructor(private options: DaemonClientOptions) {}

  get state(): DaemonState { return this._state; }
  /** The daemon's process id while it runs. */
  get pid(): number | undefined { return this.running?.child.pid; }

  /** Replaces the options used by the next start (the extension calls it before restart on a settings change). */
  setOptions(options: DaemonClientOptions): void { this.options = options; }

  /** Registers a handler for a daemon → client notification; kept across restarts. */
  onNotification<P>(method: string, handler: (params: P) => void): Disposable {
    let set = this.notificationHandlers.get(method);
    if (!set) { set = new Set(); this.notificationHandlers.set(method, set); }
    set.add(handler);
    return { dispose: () => set!.delete(handler) };
  }

  /** Sends a request to the running daemon. */
  async request<R>(method: string, params: unknown, token?: CancellationToken): Promise<R> {
    const r = this.running;
    if (this._state !== 'running' || !r) throw new NotRunningError(this._state);
    return token ? r.conn.sendRequest<R>(method, params, token) : r.conn.sendRequest<R>(method, params);
  }

  /** Starts the daemon (a no-op when it already runs). */
  start(): Promise<InitializeResult> {
    return this.enqueue(async () => {
      if (this.running && this._state === 'running') return this.initializeResult!;
      this.crashes = [];
      return this.doStart('starting');
    });
  }

  /** Stops the daemon: shutdown, exit, then a kill if it does not leave within the stop timeout. */
  stop(): Promise<void> {
    this.clearRestartTimer();
    return this.enqueue(async () => {
      await this.doStop();
      this.setState('stopped');
    });
  }

  /** Stops and starts again, resetting the crash count (a person asked for it, or settings changed). */
  restart(): Promise<InitializeResult> {
    this.clearRestartTimer();
    return this.enqueue(async () => {
      await this.doStop();
      this.crashes = [];
      return this.doStart('starting');
    });
  }

  /** Stops the daemon and drops all handlers. */
  async dispose(): Promise<void> {
    this.disposed = true;
    await this.stop().catch(() => {});
    this.stateEmitter.dispose();
    this.startEmitter.dispose();
    this.notificationHandlers.clear();
  }

  private enqueue<T>(op: () => Promise<T>): Promise<T> {
    const next = this.queue.then(op, op);
    this.queue = next.catch(() => {});
    return next;
  }

  private setState(s: DaemonState): void {
    if (this._state === s) return;
    this._state = s;
    this.stateEmitter.fire(s);
  }

  private log(line: string): void { this.options.log?.(line); }

  private clearRestartTimer(): void {
    if (this.restartTimer) { clearTimeout(this.restartTimer); this.restartTimer = undefined; }
  }

  private async doStart(state: DaemonState): Promise<InitializeResult> {
    if (this.disposed) throw new StartError('toolsd client is disposed');
    this.setState(state);
    const o = this.options;
    const args = o.spawn.args ?? [];
    this.log(`[client] starting ${o.spawn.command} ${args.join(' ')}`.trimEnd());
    let child: cp.ChildProcess;
    try {
      child = cp.spawn(o.spawn.command, args, {
        cwd: o.spawn.cwd ?? o.workspaceFolder,
        env: o.spawn.env ?? process.env,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
    } catch (e) {
      return this.failStart(`cannot start ${o.spawn.command}: ${errText(e)}`);
    }
    let hasExited = false;
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once('exit', (code, signal) => { hasExited = true; resolve({ code, signal }); });
    });
    const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
    readline.createInterface({ input: child.stderr! }).on('line', (l) => this.log(l));

    const conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    conn.onNotification((method: string, params: unknown) => {
      for (const h of [...(this.notificationHandlers.get(method) ?? [])]) {
        try { h(params); } catch (e) { this.log(`[client] handler for ${method} failed: ${errText(e)}`); }
      }
    });
    conn.onRequest((method: string) => new ResponseError(ErrorCodes.MethodNotFound, `the client does not handle ${method}`));
    conn.onError(([err]: [Error, unknown, number | undefined]) => this.log(`[client] connection error: ${errText(err)}`));
    child.stdin!.on('error', () => { /* EPIPE after the daemon died: the exit handler reports it */ });
    conn.listen();

    const running: Running = { child, conn, exited, get hasExited() { return hasExited; }, stopping: false };
    this.running = running;

    const params: InitializeParams = {
      processId: process.pid,
      clientInfo: o.clientInfo ?? { name: 'toolsd-client' },
      workspaceFolder: o.workspaceFolder,
      capabilities: o.capabilities ?? { ask: true, progress: true },
      initializationOptions: o.initializationOptions,
    };
    let result: InitializeResult;
    let timer: NodeJS.Timeout | undefined;
    try {
      result = await Promise.race([
        conn.sendRequest<InitializeResult>(Methods.initialize, params),
        spawnError.then((e) => { throw new StartError(`cannot start ${o.spawn.command}: ${e.message}`); }),
        exited.then(({ code, signal }) => {
          throw new StartError(`toolsd exited before initialize answered (${signal ? 'signal ' + signal : 'code ' + code})`);
        }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new StartError(`toolsd did not answer initialize within ${o.initializeTimeoutMs ?? 15000} ms`)),
            o.initializeTimeoutMs ?? 15000);
        }),
      ]);
    } catch (e) {
      clearTimeout(timer);
      running.stopping = true;
      await this.killAndWait(running);
      if (this.running === running) this.running = undefined;
      const code = e instanceof ResponseError ? e.code : undefined;
      return this.failStart(e instanceof StartError ? e.message : `toolsd refused initialize: ${errText(e)}`, code);
    }
    clearTimeout(timer);
    conn.sendNotification(Methods.initialized, {}).catch(() => { /* the exit handler reports a dead daemon */ });
    this.initializeResult = result;
    this.lastError = undefined;
    void exited.then((ex) => this.onExit(running, ex));
    this.log(`[client] ${result.serverInfo?.name ?? 'toolsd'} ${result.serverInfo?.version ?? ''} running (pid ${child.pid})`);
    this.setState('running');
    this.startEmitter.fire(result);
    return result;
  }

  private failStart(message: string, code?: number): never {
    const err = new StartError(message, code);
    this.lastError = err;
    this.log(`[client] start failed: ${message}`);
    this.setState('failed');
    throw err;
  }

  private onExit(r: Running, ex: { code: number | null; signal: NodeJS.Signals | null }): void {
    r.conn.dispose();
    if (this.running === r) this.running = undefined;
    if (r.stopping || this.disposed) return;
    const how = ex.signal ? `signal ${ex.signal}` : `code ${ex.code}`;
    const now = Date.now();
    const p = this.options.restart ?? {};
    const windowMs = p.windowMs ?? 180_000;
    this.crashes = this.crashes.filter((t) => now - t < windowMs);
    this.crashes.push(now);
    if (this.crashes.length > (p.maxRestarts ?? 3)) {
      this.lastError = new Error(`toolsd crashed ${this.crashes.length} times in ${Math.round(windowMs / 1000)} s (last: ${how}); not restarting`);
      this.log(`[client] ${this.lastError.message}`);
      this.setState('failed');
      return;
    }
    const delay = Math.min((p.backoffMs ?? 500) * 2 ** (this.crashes.length - 1), p.maxBackoffMs ?? 5000);
    this.lastError = new Error(`toolsd exited unexpectedly (${how})`);
    this.log(`[client] ${this.lastError.message}; restarting in ${delay} ms`);
    this.setState('restarting');
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.enqueue(async () => {
        if (this._state !== 'restarting') return; // stopped or restarted by hand meanwhile
        this.restarts++;
        await this.doStart('restarting');
      }).catch(() => { /* failStart logged it and set 'failed' */ });
    }, delay);
  }

  private async doStop(): Promise<void> {
    const r = this.running;
    if (!r) return;
    r.stopping = true;
    this.setState('stopping'); // requests fail fast from here on
    const budget = this.options.stopTimeoutMs ?? 3000;
    const deadline = Date.now() + budget;
    if (!r.hasExited) {
      try {
        await withTimeout(r.conn.sendRequest(Methods.shutdown, null), budget / 2);
        await withTimeout(r.conn.sendNotification(Methods.exit), 200).catch(() => {});
      } catch (e) {
        this.log(`[client] shutdown did not complete: ${errText(e)}`);
      }
      r.child.stdin?.end();
      const left = Math.max(deadline - Date.now(), 50);
      const gone = await withTimeout(r.exited, left).then(() => true, () => false);
      if (!gone) {
        this.log(`[client] toolsd did not exit within ${budget} ms; killing it`);
        await this.killAndWait(r);
      }
    }
    r.conn.dispose();
    if (this.running === r) this.running = undefined;
  }

  private async killAndWait(r: Running): Promise<void> {
    if (r.hasExited || r.child.pid === undefined) { r.conn.dispose(); return; }
    try { r.child.kill('SIGKILL'); } catch { /* already gone */ }
    await r.exited;
    r.conn.dispose();
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let t: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => { t = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms); }),
  ]).finally(() => clearTimeout(t));
}

export function errText(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}
