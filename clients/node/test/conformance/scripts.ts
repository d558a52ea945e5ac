// Loads and checks the language-neutral memory scripts,
// tests/scripts/memory_scripts.json (format: tests/scripts/README.md).
// The Python runner (tests/conformance/test_memory_scripts.py) is the
// reference; the Go runner is clients/go/conformance_test.go.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  ConflictResolution,
  ForgetMode,
  MemoryOperation,
  MemoryStatus,
  MemoryTier,
  MemoryType,
  WriteOutcome,
} from "../../src/index.js";

/** MEMORY: the proto Memory in the scripts' small JSON form. */
export interface MemorySpec {
  content?: string;
  type?: string;
  tier?: string;
  topic_key?: string;
  importance?: number;
  confidence?: number;
  tags?: string[];
  agent_scope?: string;
  session_id?: string;
  expire_at?: string;
}

/** Every `expect` key of every op (each op checks its own, see OPS). */
export interface Expect {
  error?: string;
  outcomes?: string[];
  related?: (string | null)[];
  same_as?: (string | null)[];
  first?: string;
  contains?: string[];
  excludes?: string[];
  count?: number;
  status?: string;
  tier?: string;
  content?: string;
  superseded_by?: string;
  supersedes?: string;
  version?: number;
  operations?: string[];
  proposed?: string[];
  existing?: string[];
  proposed_status?: string;
  existing_status?: string;
  // Sessions.
  message_count?: number;
  window_message_count?: number;
  extracted?: string[];
  max_tokens?: number;
  messages?: string[];
  min_message_count?: number;
  max_message_count?: number;
  messages_include?: string[];
  messages_exclude?: string[];
  first_message?: string;
  last_message?: string;
  summary_nonempty?: boolean;
  summary_contains?: string[];
  memory_count?: number;
  memories_first?: string;
  memories_include?: string[];
  context_contains?: string[];
  context_not_contains?: string[];
  ended?: boolean;
  summary_memory_type?: string;
  summary_memory_session?: string;
  sessions?: string[];
}

/** MESSAGE: a session message in the scripts' small JSON form. */
export interface MessageSpec {
  role: string;
  content: string;
}

/** The message roles a MESSAGE may name. */
export const MESSAGE_ROLES = ["user", "assistant", "system", "tool"];

export interface Step {
  op: string;
  tenant?: string;
  user?: string;
  expect?: Expect;
  save?: string[];
  memories?: MemorySpec[];
  request_id?: string;
  query?: string;
  top_k?: number;
  types?: string[];
  min_score?: number;
  token_budget?: number;
  id?: string;
  statuses?: string[];
  memory?: MemorySpec;
  paths?: string[];
  etag?: string;
  ids?: string[];
  topic_key?: string;
  all_of_user?: boolean;
  mode?: string;
  dry_run?: boolean;
  resolution?: string;
  session?: string;
  messages?: MessageSpec[];
  extract?: boolean;
  agent_scope?: string;
}

export interface Script {
  name: string;
  description?: string;
  steps: Step[];
}

/**
 * The request fields (besides op, tenant, user, expect) and expect keys
 * (besides error) each op reads, as in the Python reference runner. A key
 * outside these would be silently ignored, so the check below rejects it.
 */
export const OPS: Readonly<Record<string, { fields: readonly string[]; expect: readonly string[] }>> = {
  write: { fields: ["memories", "request_id", "save"], expect: ["outcomes", "related", "same_as"] },
  recall: {
    fields: ["query", "top_k", "types", "min_score", "token_budget", "save"],
    expect: ["first", "contains", "excludes", "count"],
  },
  get: { fields: ["id"], expect: ["status", "tier", "content", "superseded_by", "supersedes"] },
  list: { fields: ["statuses"], expect: ["count", "contains", "excludes"] },
  update: { fields: ["id", "memory", "paths", "etag"], expect: ["content", "version"] },
  forget: { fields: ["ids", "topic_key", "session", "all_of_user", "mode", "dry_run"], expect: ["count"] },
  restore: { fields: ["ids"], expect: ["status"] },
  confirm: { fields: ["ids"], expect: ["outcomes", "status"] },
  history: { fields: ["id"], expect: ["operations"] },
  list_conflicts: { fields: ["save"], expect: ["count", "proposed", "existing"] },
  resolve: { fields: ["id", "resolution"], expect: ["proposed_status", "existing_status"] },
  append: {
    fields: ["session", "messages", "extract", "request_id", "agent_scope", "save"],
    expect: ["message_count", "window_message_count", "extracted"],
  },
  get_context: {
    fields: ["session", "query", "token_budget", "save"],
    expect: [
      "max_tokens",
      "messages",
      "message_count",
      "min_message_count",
      "max_message_count",
      "messages_include",
      "messages_exclude",
      "first_message",
      "last_message",
      "summary_nonempty",
      "summary_contains",
      "memory_count",
      "memories_first",
      "memories_include",
      "context_contains",
      "context_not_contains",
    ],
  },
  get_session: {
    fields: ["session"],
    expect: ["message_count", "window_message_count", "ended", "summary_nonempty", "summary_contains"],
  },
  end_session: {
    fields: ["session", "save"],
    expect: ["ended", "summary_memory_type", "summary_memory_session", "summary_nonempty", "summary_contains"],
  },
  list_sessions: { fields: [], expect: ["count", "sessions"] },
};

const REQUIRED: Readonly<Record<string, readonly string[]>> = {
  write: ["memories"],
  recall: ["query"],
  get: ["id"],
  update: ["id", "memory", "paths"],
  restore: ["ids"],
  confirm: ["ids"],
  history: ["id"],
  resolve: ["id", "resolution"],
  append: ["messages"],
};

const STEP_KEYS = ["op", "tenant", "user", "expect"];
const MEMORY_KEYS = [
  "content",
  "type",
  "tier",
  "topic_key",
  "importance",
  "confidence",
  "tags",
  "agent_scope",
  "session_id",
  "expire_at",
];

/** The canonical gRPC status code names `expect.error` may hold. */
export const GRPC_CODE_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
];

type NumericEnum = Record<string, string | number>;

/** The value of the enum member `name` (the proto name without its prefix); throws if unknown. */
export function enumValue<E extends NumericEnum>(e: E, name: string, what: string): E[keyof E] {
  const v = e[name];
  if (typeof v !== "number") throw new Error(`unknown ${what} ${JSON.stringify(name)}`);
  return v as E[keyof E];
}

/** The name of an enum value without its prefix (the number if unknown). */
export function enumName(e: NumericEnum, value: number): string {
  const n = e[value];
  return typeof n === "string" ? n : String(value);
}

/** Finds tests/scripts/<name> (by default memory_scripts.json) in an ancestor of this file's folder. */
export function scriptsPath(name = "memory_scripts.json"): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, "tests", "scripts", name);
    if (existsSync(candidate)) return candidate;
    const parent = resolve(dir, "..");
    if (parent === dir) throw new Error(`tests/scripts/${name} not found above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

/** Reads the scripts (version 1). */
export function loadScripts(path = scriptsPath()): Script[] {
  const doc = JSON.parse(readFileSync(path, "utf8")) as { version?: unknown; scripts?: unknown };
  if (doc.version !== 1) throw new Error(`${path}: unsupported version ${JSON.stringify(doc.version)}`);
  if (!Array.isArray(doc.scripts)) throw new Error(`${path}: "scripts" is not a list`);
  return doc.scripts as Script[];
}

function unknownKeys(obj: object, allowed: readonly string[]): string[] {
  return Object.keys(obj).filter((k) => !allowed.includes(k));
}

/**
 * Problems in one script that would otherwise be ignored silently or fail
 * only when run: unknown ops and keys, unknown enum and code names, and
 * names used before any step saved them. Empty when the script is well formed.
 */
export function checkScript(script: Script): string[] {
  const problems: string[] = [];
  const saved = new Set<string>();
  if (typeof script.name !== "string" || script.name === "") problems.push("script without a name");
  if (!Array.isArray(script.steps) || script.steps.length === 0) return [...problems, "no steps"];
  script.steps.forEach((step, i) => {
    const at = `step ${i} (${String(step.op)})`;
    const op = OPS[step.op];
    if (op === undefined) {
      problems.push(`${at}: unknown op`);
      return;
    }
    for (const k of unknownKeys(step, [...STEP_KEYS, ...op.fields])) problems.push(`${at}: unknown key ${k}`);
    for (const k of REQUIRED[step.op] ?? []) {
      if (!(k in step)) problems.push(`${at}: missing ${k}`);
    }
    const expect = step.expect ?? {};
    for (const k of unknownKeys(expect, ["error", ...op.expect])) problems.push(`${at}: unknown expect key ${k}`);
    const tryEnum = (e: NumericEnum, names: readonly string[] | undefined, what: string) => {
      for (const n of names ?? []) {
        try {
          enumValue(e, n, what);
        } catch (err) {
          problems.push(`${at}: ${(err as Error).message}`);
        }
      }
    };
    const memories = [...(step.memories ?? []), ...(step.memory ? [step.memory] : [])];
    for (const m of memories) {
      for (const k of unknownKeys(m, MEMORY_KEYS)) problems.push(`${at}: unknown memory key ${k}`);
      tryEnum(MemoryType, m.type === undefined ? [] : [m.type], "memory type");
      tryEnum(MemoryTier, m.tier === undefined ? [] : [m.tier], "memory tier");
      if (m.expire_at !== undefined && Number.isNaN(Date.parse(m.expire_at))) {
        problems.push(`${at}: expire_at ${JSON.stringify(m.expire_at)} is not RFC 3339`);
      }
    }
    tryEnum(MemoryType, step.types, "memory type");
    tryEnum(MemoryStatus, step.statuses, "memory status");
    tryEnum(ForgetMode, step.mode === undefined ? [] : [step.mode], "forget mode");
    tryEnum(ConflictResolution, step.resolution === undefined ? [] : [step.resolution], "conflict resolution");
    tryEnum(WriteOutcome, expect.outcomes, "write outcome");
    tryEnum(WriteOutcome, expect.extracted, "write outcome");
    tryEnum(MemoryType, expect.summary_memory_type === undefined ? [] : [expect.summary_memory_type], "memory type");
    if (step.op === "append") {
      for (const m of step.messages ?? []) {
        for (const k of unknownKeys(m, ["role", "content"])) problems.push(`${at}: unknown message key ${k}`);
        if (!MESSAGE_ROLES.includes(m.role)) problems.push(`${at}: unknown message role ${JSON.stringify(m.role)}`);
        if (typeof m.content !== "string" || m.content === "") problems.push(`${at}: a message without content`);
      }
    }
    tryEnum(MemoryOperation, expect.operations, "memory operation");
    const statuses = [expect.status, expect.proposed_status, expect.existing_status].filter((s) => s !== undefined);
    tryEnum(MemoryStatus, statuses as string[], "memory status");
    tryEnum(MemoryTier, expect.tier === undefined ? [] : [expect.tier], "memory tier");
    if (expect.error !== undefined && !GRPC_CODE_NAMES.includes(expect.error)) {
      problems.push(`${at}: unknown gRPC code ${JSON.stringify(expect.error)}`);
    }
    if (step.etag !== undefined && step.etag !== "current" && step.etag !== "stale") {
      problems.push(`${at}: etag must be "current" or "stale"`);
    }
    const used = [
      step.id,
      ...(step.ids ?? []),
      expect.first,
      ...(expect.related ?? []),
      ...(expect.same_as ?? []),
      ...(expect.contains ?? []),
      ...(expect.excludes ?? []),
      expect.superseded_by,
      expect.supersedes,
      ...(expect.proposed ?? []),
      ...(expect.existing ?? []),
    ];
    for (const n of used) {
      if (typeof n === "string" && !saved.has(n))
        problems.push(`${at}: ${JSON.stringify(n)} is not saved by an earlier step`);
    }
    for (const n of step.save ?? []) saved.add(n);
  });
  return problems;
}
