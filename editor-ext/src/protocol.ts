// Wire types of the toolsd protocol (mirrors protocol/protocol.go; field names are fixed there).

export const Methods = {
  initialize: 'initialize',
  initialized: 'initialized',
  shutdown: 'shutdown',
  exit: 'exit',
  toolsResolve: 'tools/resolve',
  toolsExecute: 'tools/execute',
  toolsCancel: 'tools/cancel',
  toolsProgress: 'tools/progress',
  toolsChanged: 'tools/changed',
  permissionAsked: 'permission/asked',
  permissionReply: 'permission/reply',
  permissionList: 'permission/list',
  permissionTrust: 'permission/trust',
  callsList: 'calls/list',
  callsGet: 'calls/get',
  outputsRead: 'outputs/read',
  callsChanges: 'calls/changes',
  callsRevert: 'calls/revert',
  permissionAnswered: 'permission/answered',
  clientsList: 'clients/list',
  clientsChanged: 'clients/changed',
} as const;

export const ErrorCodes = {
  ServerNotInitialized: -32002,
  RequestCancelled: -32800,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  NotFound: -32004,
  Conflict: -32005,
} as const;

export type CallStatus = 'pending' | 'running' | 'completed' | 'error' | 'cancelled' | 'interrupted';

export interface ClientCapabilities { ask: boolean; progress: boolean }

/** A client attached to the workspace's daemon: an editor window or an agent through `toolsd mcp`. */
export interface ClientRef { id: string; name: string; version?: string; kind?: 'editor' | 'mcp' | string }

export interface ClientsParams { clients: ClientRef[] }

export interface InitializeParams {
  processId?: number;
  clientInfo?: { name: string; version?: string };
  workspaceFolder: string;
  capabilities?: ClientCapabilities;
  initializationOptions?: unknown;
}

export interface InitializeResult {
  serverInfo: { name: string; version: string };
  capabilities: {
    cancel?: boolean; progress?: boolean; ask?: boolean; hotReload?: boolean;
    maxMessageBytes?: number; permissions?: string[];
  };
  storePath: string;
}

export interface Model { providerID: string; modelID: string }

export interface ResolveParams { sessionID: string; agent?: string; model?: Model }

export interface ToolInfo { id: string; description: string; inputSchema: unknown; source: string }

export interface Diagnostic {
  path: string;
  line?: number;
  column?: number;
  message: string;
  severity: 'error' | 'warning' | string;
  /** A command the person can run to fix it (a sysctl, say). */
  fix?: string;
}

export interface ResolveResult { tools: ToolInfo[]; diagnostics: Diagnostic[] }

export interface ExecuteParams {
  sessionID: string;
  messageID: string;
  callID: string;
  tool: string;
  args: unknown;
  agent?: string;
  model?: Model;
}

export interface Attachment { id: string; sessionID: string; messageID: string; mime: string; filename?: string; data: string }

export interface ExecuteResult {
  callID: string;
  status: CallStatus;
  title: string;
  output: string;
  metadata: Record<string, unknown> | null;
  attachments: Attachment[];
  truncated: boolean;
  outputID?: string;
  error?: string;
}

export interface ProgressParams {
  sessionID: string;
  messageID?: string;
  callID: string;
  tool: string;
  status: CallStatus;
  title?: string;
  metadata?: Record<string, unknown> | null;
  /** The client that made the call. */
  client?: ClientRef;
}

export interface ChangedParams { added: string[]; removed: string[]; changed: string[]; diagnostics: Diagnostic[] }

export interface RuleInfo { permission: string; pattern: string; action: string; source?: string }

/** What decided a permission request (protocol.Provenance). */
export interface Provenance {
  /** rule, default, no-rule, remembered, opaque, exact-only, hook, sandbox */
  kind: string;
  /** One line for a person. */
  text: string;
  rule?: string;
  layer?: string;
  file?: string;
  line?: number;
  column?: number;
  pattern?: string;
  rememberedAt?: string;
  rememberedBy?: string;
  hook?: string;
  reason?: string;
  reasons?: string[];
  untrusted?: string;
}

/** Who or what allowed or refused one permission request of a call (calls/get). */
export interface Decision {
  permission: string;
  patterns: string[];
  action: string;
  /** rule, person, sandbox, hook, no-ui, cancel */
  by: string;
  rule?: RuleInfo;
  reply?: string;
  scope?: string;
  message?: string;
  at: string;
  provenance?: Provenance;
  askedAt?: string;
  waitedMs?: number;
  answeredBy?: string;
}

export interface AskedParams {
  id: string;
  sessionID: string;
  messageID?: string;
  callID: string;
  tool: string;
  permission: string;
  patterns: string[];
  always: string[];
  metadata: Record<string, unknown> | null;
  rule?: RuleInfo;
  /** Why it asks: the rule and where it is written, or why no rule could allow it. */
  provenance?: Provenance;
  destructive?: boolean;
  /** The client whose call asks. */
  client?: ClientRef;
}

/** permission/answered: an ask shown here is no longer pending (answered elsewhere, released, withdrawn). */
export interface AnsweredParams { id: string; reply?: Reply; by: 'person' | 'rule' | 'cancel' | string; client?: ClientRef }

export type Reply = 'once' | 'always' | 'reject';
export type Scope = 'session' | 'workspace';

export interface ReplyParams { id: string; reply: Reply; message?: string; scope?: Scope; always?: string[] }
export interface ReplyResult { released: string[] }
export interface ListAsksResult { asks: AskedParams[] }
export interface TrustParams { trusted: boolean }
export interface TrustResult { trusted: boolean }

export interface CallsListParams { sessionID?: string; client?: string; limit?: number; cursor?: string }

export interface CallSummary {
  callID: string;
  sessionID: string;
  messageID: string;
  tool: string;
  status: CallStatus;
  title: string;
  startedAt: string;
  endedAt?: string;
  truncated: boolean;
  outputID?: string;
  /** How many paths of the workspace the call changed (calls/changes shows them). */
  changes?: number;
  /** The call's process ran in the OS sandbox. */
  confined?: boolean;
  client?: ClientRef;
}

export interface CallsListResult { calls: CallSummary[]; nextCursor?: string }

/** One run of a hook for a call (protocol.HookRun). */
export interface HookRun {
  hook: string;
  /** definition, before, after, permission */
  point: string;
  /** user, editor, project, client */
  layer: string;
  file?: string;
  line?: number;
  column?: number;
  client?: ClientRef;
  startedAt: string;
  durationMs: number;
  /** ok, blocked, failed */
  outcome: string;
  decision?: string;
  reason?: string;
  /** args, title, output, metadata */
  changed?: string[];
  context?: string;
  error?: string;
  /** fail-open or fail-closed: what followed the failure */
  onFailure?: string;
  exitCode?: number;
  note?: string;
}

export interface CallRecord extends CallSummary {
  agent?: string;
  model?: Model;
  /** The arguments the tool ran with. */
  args: unknown;
  /** The arguments the model sent, when a before hook changed them. */
  modelArgs?: unknown;
  metadata: unknown;
  output: string;
  error?: string;
  attachments: Attachment[];
  decisions: Decision[];
  /** The hooks that ran for the call, in order. */
  hooks?: HookRun[];
}

export interface OutputsReadParams { outputID: string; offset?: number; limit?: number }
export interface OutputsReadResult { content: string; offset: number; lines: number; totalLines: number; totalBytes: number }

export interface CallRef { sessionID: string; callID: string; tool?: string }

export interface FileChangeInfo {
  path: string;
  oldPath?: string;
  status: 'added' | 'modified' | 'deleted' | 'renamed' | 'typeChanged';
  kind: '' | 'file' | 'link' | 'dir';
  oldKind: '' | 'file' | 'link' | 'dir';
  mode?: number;
  oldMode?: number;
  binary?: boolean;
  diff: string;
  additions: number;
  deletions: number;
  notKept?: string;
  attribution: 'call' | 'during' | 'interrupted';
  alsoTouchedBy: CallRef[];
  calls: CallRef[];
  before?: string;
  after?: string;
}

export interface CallsChangesParams { sessionID: string; callID?: string; path?: string; contents?: boolean }
export interface CallsChangesResult { files: FileChangeInfo[]; calls: CallRef[]; concurrent: CallRef[]; notes: string[] }

export interface CallsRevertParams { sessionID: string; callID: string; scope?: 'call' | 'from'; force?: boolean; dryRun?: boolean }
export interface RevertFile {
  path: string;
  action: 'restore' | 'delete' | 'create';
  conflict?: string;
  changedBy: CallRef[];
  alsoTouchedBy: CallRef[];
  skipped?: string;
}
export interface CallsRevertResult {
  status: 'planned' | 'reverted' | 'conflict' | 'nothing';
  revertCallID?: string;
  calls: CallRef[];
  files: RevertFile[];
  concurrent: CallRef[];
  message: string;
}
