// Runs the language-neutral memory scripts (tests/scripts/memory_scripts.json,
// format in tests/scripts/README.md) against a live server through
// RecalldClient, with the semantics of the Python reference runner
// (tests/conformance/test_memory_scripts.py). One test per script.
//
// Needs a server started without API keys on loopback, e.g.
//   recalld serve --host 127.0.0.1 --port 50051 --data-dir /tmp/recalld-conf
//   RECALLD_ADDR=127.0.0.1:50051 npm run test:conformance
// The script tests are skipped when RECALLD_ADDR is unset; the check that the
// file is well formed always runs.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { inspect } from "node:util";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";
import {
  ConflictResolution,
  ForgetMode,
  type Memory,
  MemoryOperation,
  type MemorySchema,
  MemoryStatus,
  MemoryTier,
  MemoryType,
  type MessageRoleName,
  RecalldClient,
  RecalldError,
  WriteOutcome,
} from "../../src/index.js";
import {
  checkScript,
  type Expect,
  enumName,
  enumValue,
  loadScripts,
  type MemorySpec,
  type MessageSpec,
  type Script,
  type Step,
  scriptsPath,
} from "./scripts.js";

const addr = process.env.RECALLD_ADDR ?? "";
const skip =
  addr === ""
    ? "RECALLD_ADDR is unset: start `recalld serve` without API keys and export RECALLD_ADDR=host:port to run the memory scripts"
    : false;

const scripts = loadScripts();

/** An RFC 3339 time as a Timestamp, keeping sub-millisecond digits. */
function parseTimestamp(text: string): Timestamp {
  const m = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/i.exec(text);
  const ms = Date.parse(m ? `${m[1]}${m[3]}` : text);
  if (!m || Number.isNaN(ms)) throw new Error(`expire_at ${JSON.stringify(text)} is not RFC 3339`);
  const nanos = m[2] ? Number(m[2].slice(1, 10).padEnd(9, "0")) : 0;
  return create(TimestampSchema, { seconds: BigInt(ms / 1000), nanos });
}

/** The proto Memory for a MEMORY spec (unset keys stay unset; content defaults to ""). */
function memory(spec: MemorySpec): MessageInitShape<typeof MemorySchema> {
  const m: MessageInitShape<typeof MemorySchema> = { content: spec.content ?? "" };
  if (spec.type !== undefined) m.type = enumValue(MemoryType, spec.type, "memory type");
  if (spec.tier !== undefined) m.tier = enumValue(MemoryTier, spec.tier, "memory tier");
  if (spec.topic_key !== undefined) m.topicKey = spec.topic_key;
  if (spec.agent_scope !== undefined) m.agentScope = spec.agent_scope;
  if (spec.session_id !== undefined) m.sessionId = spec.session_id;
  if (spec.importance !== undefined) m.importance = spec.importance;
  if (spec.confidence !== undefined) m.confidence = spec.confidence;
  m.tags = [...(spec.tags ?? [])];
  if (spec.expire_at !== undefined) m.expireAt = parseTimestamp(spec.expire_at);
  return m;
}

function status(m: Memory | undefined): string {
  return enumName(MemoryStatus, m?.status ?? MemoryStatus.UNSPECIFIED);
}

/** The message to append for a MESSAGE spec. */
function message(spec: MessageSpec): { role: MessageRoleName; content: string } {
  return { role: spec.role as MessageRoleName, content: spec.content };
}

/** Checks summary_nonempty and summary_contains against a summary. */
function checkSummary(summary: string, expect: Expect): void {
  if (expect.summary_nonempty !== undefined) {
    same(summary !== "", expect.summary_nonempty, `summary_nonempty of ${JSON.stringify(summary)}`);
  }
  for (const text of expect.summary_contains ?? []) {
    assert.ok(summary.includes(text), `summary_contains ${text}: ${JSON.stringify(summary)}`);
  }
}

/** Asserts deep equality with a message naming the check and both values. */
function same<T>(actual: T, expected: T, what: string): void {
  assert.deepEqual(actual, expected, `${what}: got ${inspect(actual)}, want ${inspect(expected)}`);
}

type Op = (step: Step, expect: Expect) => Promise<void>;

/** One run of one script: symbolic names to fresh tenants, users and ids. */
class ScriptRun {
  readonly runId = randomBytes(5).toString("hex");
  private readonly clients = new Map<string, RecalldClient>();
  private readonly ids = new Map<string, string>();

  constructor(private readonly address: string) {}

  async close(): Promise<void> {
    await Promise.all([...this.clients.values()].map((c) => c.close()));
  }

  private client(step: Step): RecalldClient {
    const tenant = step.tenant ?? "main";
    let c = this.clients.get(tenant);
    if (c === undefined) {
      c = new RecalldClient({ address: this.address, tenant: `${tenant}-${this.runId}` });
      this.clients.set(tenant, c);
    }
    return c;
  }

  private user(step: Step): string {
    return `${step.user ?? "u1"}-${this.runId}`;
  }

  /** Session names are used as they are: tenants and users are fresh per run. */
  private session(step: Step): string {
    return step.session ?? "s1";
  }

  /** A saved name names the memory by id; anything else is a content substring. */
  private matches(m: Memory | undefined, ref: string): boolean {
    const id = this.ids.get(ref);
    return id !== undefined ? m?.id === id : (m?.content ?? "").includes(ref);
  }

  private idOf(name: string): string {
    const id = this.ids.get(name);
    if (id === undefined) throw new Error(`no memory was saved as ${JSON.stringify(name)}`);
    return id;
  }

  private nameOf(id: string): string {
    for (const [name, i] of this.ids) if (i === id) return name;
    return id;
  }

  private save(step: Step, ids: string[]): void {
    (step.save ?? []).forEach((name, i) => {
      if (i < ids.length) this.ids.set(name, ids[i]!);
    });
  }

  async step(step: Step): Promise<void> {
    const expect = step.expect ?? {};
    const op = this.ops[step.op];
    if (op === undefined) throw new Error(`unknown op ${JSON.stringify(step.op)}`);
    try {
      await op(step, expect);
    } catch (e) {
      if (!(e instanceof RecalldError) || expect.error === undefined) throw e;
      assert.equal(e.codeName, expect.error, `expected ${expect.error}, got ${e.message}`);
      return;
    }
    assert.equal(expect.error, undefined, `expected ${expect.error}, but the call succeeded`);
  }

  private readonly ops: Record<string, Op> = {
    write: async (step, expect) => {
      const res = await this.client(step).write({
        userId: this.user(step),
        memories: (step.memories ?? []).map(memory),
        requestId: step.request_id ?? "",
      });
      const results = res.results;
      this.save(
        step,
        results.map((r) => r.id),
      );
      if (expect.outcomes !== undefined) {
        same(
          results.map((r) => enumName(WriteOutcome, r.outcome)),
          expect.outcomes,
          "outcomes",
        );
      }
      for (const [key, field] of [
        ["related", "relatedId"],
        ["same_as", "id"],
      ] as const) {
        const names = expect[key];
        if (names === undefined) continue;
        assert.equal(results.length, names.length, `${key}: ${results.length} results for ${names.length} names`);
        names.forEach((name, i) => {
          if (name !== null) same(results[i]![field], this.idOf(name), `${key}[${i}] (${name})`);
        });
      }
    },

    recall: async (step, expect) => {
      const res = await this.client(step).recall({
        userId: this.user(step),
        query: step.query ?? "",
        topK: step.top_k ?? 10,
        ...(step.types !== undefined && { types: step.types.map((t) => enumValue(MemoryType, t, "memory type")) }),
        ...(step.min_score !== undefined && { minScore: step.min_score }),
        ...(step.token_budget !== undefined && { tokenBudget: step.token_budget }),
      });
      const ids = res.items.map((i) => i.memory?.id ?? "");
      this.save(step, ids);
      const named = ids.map((i) => this.nameOf(i));
      if (expect.first !== undefined) same(named.slice(0, 1), [expect.first], `first of ${inspect(named)}`);
      for (const name of expect.contains ?? []) {
        assert.ok(ids.includes(this.idOf(name)), `contains ${name}: ${JSON.stringify(named)}`);
      }
      for (const name of expect.excludes ?? []) {
        assert.ok(!ids.includes(this.idOf(name)), `excludes ${name}: ${JSON.stringify(named)}`);
      }
      if (expect.count !== undefined) same(ids.length, expect.count, `count of ${inspect(named)}`);
    },

    get: async (step, expect) => {
      const res = await this.client(step).get({ userId: this.user(step), id: this.idOf(step.id ?? "") });
      const m = res.memory;
      if (expect.status !== undefined) same(status(m), expect.status, "status");
      if (expect.tier !== undefined) same(enumName(MemoryTier, m?.tier ?? 0), expect.tier, "tier");
      if (expect.content !== undefined) same(m?.content ?? "", expect.content, "content");
      if (expect.superseded_by !== undefined) {
        same(m?.supersededById ?? "", this.idOf(expect.superseded_by), "superseded_by");
      }
      if (expect.supersedes !== undefined) same(m?.supersedesId ?? "", this.idOf(expect.supersedes), "supersedes");
    },

    list: async (step, expect) => {
      const statuses = (step.statuses ?? []).map((s) => enumValue(MemoryStatus, s, "memory status"));
      const ids: string[] = [];
      for await (const m of this.client(step).listAll({ userId: this.user(step), pageSize: 100, statuses })) {
        ids.push(m.id);
      }
      const named = JSON.stringify(ids.map((i) => this.nameOf(i)));
      if (expect.count !== undefined) same(ids.length, expect.count, `count of ${named}`);
      for (const name of expect.contains ?? []) assert.ok(ids.includes(this.idOf(name)), `contains ${name}: ${named}`);
      for (const name of expect.excludes ?? []) assert.ok(!ids.includes(this.idOf(name)), `excludes ${name}: ${named}`);
    },

    update: async (step, expect) => {
      const client = this.client(step);
      const userId = this.user(step);
      const m = { ...memory(step.memory ?? {}), id: this.idOf(step.id ?? "") };
      if (step.etag === "current") {
        m.etag = (await client.get({ userId, id: m.id })).memory?.etag ?? "";
      } else if (step.etag === "stale") {
        m.etag = 'W/"0"';
      }
      const res = await client.update({ userId, memory: m, updateMask: { paths: step.paths ?? [] } });
      if (expect.content !== undefined) same(res.memory?.content ?? "", expect.content, "content");
      if (expect.version !== undefined) same(res.memory?.version ?? 0n, BigInt(expect.version), "version");
    },

    forget: async (step, expect) => {
      const res = await this.client(step).forget({
        userId: this.user(step),
        ids: (step.ids ?? []).map((n) => this.idOf(n)),
        mode: enumValue(ForgetMode, step.mode ?? "SOFT", "forget mode"),
        dryRun: step.dry_run ?? false,
        ...(step.topic_key !== undefined && { topicKey: step.topic_key }),
        ...(step.session !== undefined && { sessionId: this.session(step) }),
        ...(step.all_of_user && { allOfUser: true }),
      });
      if (expect.count !== undefined) same(res.forgottenIds.length, expect.count, "count");
    },

    restore: async (step, expect) => {
      const res = await this.client(step).restore({
        userId: this.user(step),
        ids: (step.ids ?? []).map((n) => this.idOf(n)),
      });
      if (expect.status !== undefined) {
        assert.ok(
          res.memories.every((m) => status(m) === expect.status),
          `status: ${res.memories.map(status)}`,
        );
      }
    },

    confirm: async (step, expect) => {
      const res = await this.client(step).confirm({
        userId: this.user(step),
        ids: (step.ids ?? []).map((n) => this.idOf(n)),
      });
      if (expect.outcomes !== undefined) {
        same(
          res.results.map((r) => enumName(WriteOutcome, r.outcome)),
          expect.outcomes,
          "outcomes",
        );
      }
      if (expect.status !== undefined) {
        const got = res.results.map((r) => status(r.memory));
        assert.ok(
          got.every((s) => s === expect.status),
          `status: ${got}`,
        );
      }
    },

    history: async (step, expect) => {
      const res = await this.client(step).history({ userId: this.user(step), id: this.idOf(step.id ?? "") });
      if (expect.operations !== undefined) {
        same(
          res.versions.map((v) => enumName(MemoryOperation, v.operation)),
          expect.operations,
          "operations",
        );
      }
    },

    list_conflicts: async (step, expect) => {
      const res = await this.client(step).listConflicts({ userId: this.user(step) });
      const conflicts = res.conflicts;
      this.save(
        step,
        conflicts.map((c) => c.proposed?.id ?? ""),
      );
      if (expect.count !== undefined) same(conflicts.length, expect.count, "count");
      if (expect.proposed !== undefined) {
        same(
          conflicts.map((c) => c.proposed?.id ?? ""),
          expect.proposed.map((n) => this.idOf(n)),
          "proposed",
        );
      }
      if (expect.existing !== undefined) {
        same(
          conflicts.map((c) => c.existing?.id ?? ""),
          expect.existing.map((n) => this.idOf(n)),
          "existing",
        );
      }
    },

    resolve: async (step, expect) => {
      const res = await this.client(step).resolveConflict({
        userId: this.user(step),
        conflictId: this.idOf(step.id ?? ""),
        resolution: enumValue(ConflictResolution, step.resolution ?? "", "conflict resolution"),
      });
      if (expect.proposed_status !== undefined) same(status(res.proposed), expect.proposed_status, "proposed_status");
      if (expect.existing_status !== undefined) same(status(res.existing), expect.existing_status, "existing_status");
    },

    append: async (step, expect) => {
      const res = await this.client(step).appendMessages({
        userId: this.user(step),
        sessionId: this.session(step),
        messages: (step.messages ?? []).map(message),
        extract: step.extract ?? false,
        requestId: step.request_id ?? "",
        agentScope: step.agent_scope ?? "",
      });
      this.save(
        step,
        res.extracted.map((r) => r.id),
      );
      if (expect.message_count !== undefined) {
        same(res.session?.messageCount ?? 0n, BigInt(expect.message_count), "message_count");
      }
      if (expect.window_message_count !== undefined) {
        same(res.session?.windowMessageCount ?? 0, expect.window_message_count, "window_message_count");
      }
      if (expect.extracted !== undefined) {
        same(
          res.extracted.map((r) => enumName(WriteOutcome, r.outcome)),
          expect.extracted,
          "extracted",
        );
      }
    },

    get_context: async (step, expect) => {
      const res = await this.client(step).getContext({
        userId: this.user(step),
        sessionId: this.session(step),
        query: step.query ?? "",
        tokenBudget: step.token_budget ?? 0,
      });
      const memories = res.memories.map((i) => i.memory);
      this.save(
        step,
        memories.map((m) => m?.id ?? ""),
      );
      const contents = res.messages.map((m) => m.content);
      const shown = JSON.stringify(contents);
      if (expect.max_tokens !== undefined) {
        assert.ok(res.tokenEstimate <= expect.max_tokens, `token_estimate ${res.tokenEstimate} > ${expect.max_tokens}`);
      }
      if (expect.messages !== undefined) same(contents, expect.messages, "messages");
      if (expect.message_count !== undefined) same(contents.length, expect.message_count, `message_count of ${shown}`);
      if (expect.min_message_count !== undefined) {
        assert.ok(contents.length >= expect.min_message_count, `min_message_count: ${shown}`);
      }
      if (expect.max_message_count !== undefined) {
        assert.ok(contents.length <= expect.max_message_count, `max_message_count: ${shown}`);
      }
      for (const text of expect.messages_include ?? [])
        assert.ok(contents.includes(text), `includes ${text}: ${shown}`);
      for (const text of expect.messages_exclude ?? [])
        assert.ok(!contents.includes(text), `excludes ${text}: ${shown}`);
      if (expect.first_message !== undefined) same(contents.slice(0, 1), [expect.first_message], "first_message");
      if (expect.last_message !== undefined) same(contents.slice(-1), [expect.last_message], "last_message");
      checkSummary(res.summary, expect);
      const texts = JSON.stringify(memories.map((m) => m?.content ?? ""));
      if (expect.memory_count !== undefined) same(memories.length, expect.memory_count, `memory_count of ${texts}`);
      if (expect.memories_first !== undefined) {
        assert.ok(
          this.matches(memories[0], expect.memories_first),
          `memories_first ${expect.memories_first}: ${texts}`,
        );
      }
      for (const ref of expect.memories_include ?? []) {
        assert.ok(
          memories.some((m) => this.matches(m, ref)),
          `memories_include ${ref}: ${texts}`,
        );
      }
      for (const text of expect.context_contains ?? []) {
        assert.ok(res.context.includes(text), `context_contains ${text}: ${JSON.stringify(res.context)}`);
      }
      for (const text of expect.context_not_contains ?? []) {
        assert.ok(!res.context.includes(text), `context_not_contains ${text}: ${JSON.stringify(res.context)}`);
      }
    },

    get_session: async (step, expect) => {
      const res = await this.client(step).getSession({ userId: this.user(step), sessionId: this.session(step) });
      const s = res.session;
      if (expect.message_count !== undefined) {
        same(s?.messageCount ?? 0n, BigInt(expect.message_count), "message_count");
      }
      if (expect.window_message_count !== undefined) {
        same(s?.windowMessageCount ?? 0, expect.window_message_count, "window_message_count");
      }
      if (expect.ended !== undefined) same(s?.endedAt !== undefined, expect.ended, "ended");
      checkSummary(s?.summary ?? "", expect);
    },

    end_session: async (step, expect) => {
      const res = await this.client(step).endSession({ userId: this.user(step), sessionId: this.session(step) });
      const m = res.summaryMemory;
      this.save(step, m === undefined ? [] : [m.id]);
      if (expect.ended !== undefined) same(res.session?.endedAt !== undefined, expect.ended, "ended");
      if (expect.summary_memory_type !== undefined) {
        assert.ok(m !== undefined, "no summary memory");
        same(enumName(MemoryType, m.type), expect.summary_memory_type, "summary_memory_type");
        same(res.session?.summaryMemoryId ?? "", m.id, "session.summary_memory_id");
      }
      if (expect.summary_memory_session !== undefined) {
        same(m?.sessionId ?? "", expect.summary_memory_session, "summary_memory_session");
      }
      checkSummary(res.session?.summary ?? "", expect);
    },

    list_sessions: async (step, expect) => {
      const names: string[] = [];
      for await (const s of this.client(step).listAllSessions({ userId: this.user(step) })) names.push(s.sessionId);
      if (expect.count !== undefined) same(names.length, expect.count, `count of ${JSON.stringify(names)}`);
      if (expect.sessions !== undefined) same([...names].sort(), [...expect.sessions].sort(), "sessions");
    },
  };
}

async function runScript(script: Script, address: string): Promise<void> {
  const run = new ScriptRun(address);
  try {
    for (const [index, step] of script.steps.entries()) {
      try {
        await run.step(step);
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        throw new Error(`step ${index} (${step.op}): ${message}`, { cause: e });
      }
    }
  } finally {
    await run.close();
  }
}

describe(`memory scripts (${scriptsPath()})`, () => {
  it("the scripts are well formed", () => {
    assert.ok(scripts.length > 0, "no scripts");
    const names = scripts.map((s) => s.name);
    assert.equal(new Set(names).size, names.length, `duplicate script names: ${names}`);
    const problems = scripts.flatMap((s) => checkScript(s).map((p) => `${s.name}: ${p}`));
    assert.deepEqual(problems, []);
  });

  for (const script of scripts) {
    it(script.name, { skip }, () => runScript(script, addr));
  }
});
