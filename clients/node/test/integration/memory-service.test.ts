// Integration tests against a live recalld server without API keys (loopback),
// e.g. `recalld serve --host 127.0.0.1 --port 50051 --data-dir /tmp/recalld-it`
// then `RECALLD_ADDR=127.0.0.1:50051 npm test`. Skipped when RECALLD_ADDR is unset.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import {
  Code,
  ErrorReason,
  ForgetMode,
  fromJsonString,
  type JsonObject,
  MemorySchema,
  MemoryTier,
  MemoryType,
  RecalldClient,
  RecalldError,
  toJson,
  toJsonString,
  WriteOutcome,
} from "../../src/index.js";

const addr = process.env.RECALLD_ADDR ?? "";
const skip = addr === "" ? "RECALLD_ADDR is unset: start a server and export RECALLD_ADDR=host:port to run" : false;

function isCode(code: Code, reason?: ErrorReason) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof RecalldError, `expected RecalldError, got ${String(e)}`);
    assert.equal(e.codeName, new RecalldError({ code, message: "" }).codeName, e.message);
    if (reason !== undefined) assert.equal(e.errorReason, reason, `reason ${e.reason}`);
    return true;
  };
}

describe("MemoryService against a live server", () => {
  const run = randomUUID().slice(0, 8);
  const tenant = `it-node-${run}`;
  let client: RecalldClient;

  before(() => {
    if (skip) return;
    client = new RecalldClient({ address: addr, tenant });
  });
  after(() => client?.close());

  it("reports the server healthy through grpc.health.v1", { skip }, async () => {
    assert.equal(await client.health(), "SERVING");
    assert.equal(await client.health({ service: "recalld.v1.MemoryService" }), "SERVING");
    // The standard servicer answers Check for a service it does not know with NOT_FOUND.
    await assert.rejects(client.health({ service: "no.such.Service" }), isCode(Code.NotFound));
  });

  it("writes more than 100 memories in chunks, in order, replayed by request id", { skip }, async () => {
    const userId = `user-${randomUUID()}`;
    const words = ["amber", "birch", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper"];
    const memories = Array.from({ length: 250 }, (_, i) => ({
      type: MemoryType.FACT,
      content: `Locker ${i} of the ${words[i % 10]} wing holds the user's ${words[(i * 7) % 10]} box number ${i * 13}.`,
    }));
    // The server takes at most 100 per call: without chunking this write is refused.
    await assert.rejects(client.raw.write({ userId, memories: memories.slice(0, 101) }), /at most 100/);

    const requestId = `bulk-${randomUUID()}`;
    const first = await client.write({ userId, requestId, memories });
    assert.equal(first.results.length, 250);
    assert.deepEqual(
      first.results.map((r) => r.memory?.content),
      memories.map((m) => m.content),
      "results in request order",
    );
    assert.ok(first.results.every((r) => r.outcome === WriteOutcome.CREATED));
    assert.equal(new Set(first.results.map((r) => r.id)).size, 250);

    const again = await client.write({ userId, requestId, memories });
    assert.deepEqual(
      again.results.map((r) => r.id),
      first.results.map((r) => r.id),
      "the same request id replays every chunk",
    );
    let stored = 0;
    for await (const _ of client.listAll({ userId, pageSize: 500 })) stored++;
    assert.equal(stored, 250, "nothing was written twice");
  });

  it("says what a chunked write stored before a chunk failed; a retry resumes", { skip }, async () => {
    const userId = `user-${randomUUID()}`;
    const memories = Array.from({ length: 150 }, (_, i) => ({
      type: MemoryType.FACT,
      content: `Shelf ${i} in the user's archive holds volume ${i * 17} of the travel diaries.`,
    }));
    const requestId = `bulk-${randomUUID()}`;
    const broken = memories.map((m, i) => (i === 120 ? { ...m, content: "" } : m));
    await assert.rejects(client.write({ userId, requestId, memories: broken }), (e: unknown) => {
      isCode(Code.InvalidArgument, ErrorReason.INVALID_FIELD)(e);
      const err = e as RecalldError;
      assert.equal(err.written?.memories, 100);
      assert.equal(err.written?.chunks, 1);
      assert.match(err.message, /the first 100 memories, 1 chunk\(s\), were written/);
      assert.ok(
        err.fieldViolations.some((v) => v.field === "memories[120].content"),
        `violations: ${JSON.stringify(err.fieldViolations)}`,
      );
      return true;
    });
    assert.equal((await client.list({ userId, pageSize: 500 })).memories.length, 100);

    const fixed = await client.write({ userId, requestId, memories });
    assert.equal(fixed.results.length, 150);
    assert.equal((await client.list({ userId, pageSize: 500 })).memories.length, 150, "chunk 0 was replayed");
  });

  it("serialises a stored memory to JSON with toJson", { skip }, async () => {
    const userId = `user-${randomUUID()}`;
    const written = await client.write({
      userId,
      memories: [{ type: MemoryType.PREFERENCE, content: "The user takes their tea without sugar." }],
    });
    const memory = written.results[0]!.memory!;
    assert.equal(typeof memory.version, "bigint");
    assert.throws(() => JSON.stringify(memory), TypeError);
    const json = toJson(MemorySchema, memory) as JsonObject;
    assert.equal(json.version, String(memory.version));
    assert.equal(json.content, "The user takes their tea without sugar.");
    assert.equal(fromJsonString(MemorySchema, toJsonString(MemorySchema, memory)).id, memory.id);
  });

  it("surfaces TLS against this plaintext server as UNAVAILABLE with a hint", { skip }, async () => {
    const tlsClient = new RecalldClient({ address: addr, tls: true, tenant });
    try {
      await assert.rejects(tlsClient.health({ timeoutMs: 5000 }), (e: unknown) => {
        isCode(Code.Unavailable)(e);
        assert.match((e as RecalldError).message, /TLS mismatch\? the client uses TLS and the server may be plaintext/);
        return true;
      });
    } finally {
      await tlsClient.close();
    }
  });

  it("closes without cutting the call in flight", { skip }, async () => {
    // RECALLD_SERVER_LOG (the server's log file, if given) must then show no
    // GOAWAY with an error code: gRPC logs `Got goaway [8]` for a cancelled connection.
    const log = process.env.RECALLD_SERVER_LOG ?? "";
    const logStart = log === "" ? 0 : statSync(log).size;
    const own = new RecalldClient({ address: addr, tenant });
    const userId = `user-${randomUUID()}`;
    await own.write({
      userId,
      memories: [{ type: MemoryType.FACT, content: "The user's bike is a green gravel bike." }],
    });
    const inFlight = own.recall({ userId, query: "What bike does the user ride?" });
    await own.close();
    assert.equal((await inFlight).items[0]?.memory?.content, "The user's bike is a green gravel bike.");
    if (log !== "") {
      await sleep(500); // the server logs the GOAWAY as it reads it
      const added = readFileSync(log).subarray(logStart).toString("utf8");
      assert.doesNotMatch(added, /Got goaway \[[1-9]/);
    }
  });

  it("writes, recalls, gets, lists, updates and forgets", { skip }, async () => {
    const userId = `user-${randomUUID()}`;
    const write = await client.write({
      userId,
      requestId: `req-${randomUUID()}`,
      memories: [
        { type: MemoryType.PREFERENCE, content: "The user prefers oat milk in their coffee.", tags: ["drink"] },
        { type: MemoryType.FACT, content: "用户住在杭州，最喜欢喝西湖龙井茶。", tags: ["home"] },
      ],
    });
    assert.equal(write.results.length, 2);
    for (const r of write.results) {
      assert.equal(r.outcome, WriteOutcome.CREATED);
      assert.ok(r.id !== "");
    }
    const [enId, zhId] = write.results.map((r) => r.id) as [string, string];

    const en = await client.recall({ userId, query: "Which milk does the user like in coffee?", topK: 5 });
    assert.ok(
      en.items.some((i) => i.memory?.id === enId),
      `English memory recalled: ${JSON.stringify(en.items.map((i) => i.memory?.id))}`,
    );
    assert.equal(en.items[0]?.memory?.id, enId);
    const zh = await client.recall({ userId, query: "用户住在哪个城市？喜欢喝什么茶？", topK: 5 });
    assert.ok(
      zh.items.some((i) => i.memory?.id === zhId),
      "Chinese memory recalled",
    );
    assert.equal(zh.items[0]?.memory?.id, zhId);

    const got = await client.get({ userId, id: zhId });
    assert.equal(got.memory?.content, "用户住在杭州，最喜欢喝西湖龙井茶。");
    const etag = got.memory?.etag ?? "";
    assert.ok(etag !== "", "Get returns an etag");

    const listed: string[] = [];
    for await (const m of client.listAll({ userId, pageSize: 1 })) listed.push(m.id);
    assert.deepEqual([...listed].sort(), [enId, zhId].sort());

    const updated = await client.update({
      userId,
      memory: { id: zhId, etag, content: "用户搬到了上海，仍然喜欢龙井茶。" },
      updateMask: { paths: ["content"] },
    });
    assert.equal(updated.memory?.content, "用户搬到了上海，仍然喜欢龙井茶。");
    assert.notEqual(updated.memory?.etag, etag);

    await assert.rejects(
      client.update({ userId, memory: { id: zhId, etag, importance: 0.9 }, updateMask: { paths: ["importance"] } }),
      isCode(Code.Aborted, ErrorReason.ETAG_MISMATCH),
    );

    const forgotten = await client.forget({ userId, ids: [enId], mode: ForgetMode.HARD });
    assert.deepEqual(forgotten.forgottenIds, [enId]);
    await assert.rejects(client.get({ userId, id: enId }), isCode(Code.NotFound, ErrorReason.MEMORY_NOT_FOUND));
  });

  it("returns the profile, cached, and in Recall's context", { skip }, async () => {
    const userId = `user-${randomUUID()}`;
    const write = await client.write({
      userId,
      memories: [
        {
          type: MemoryType.FACT,
          tier: MemoryTier.P0,
          topicKey: "profile.name",
          content: "The user's name is Chen Jing.",
        },
        { type: MemoryType.PREFERENCE, topicKey: "drink", content: "The user prefers green tea." },
      ],
    });
    const ids = write.results.map((r) => r.id);
    assert.equal(ids.length, 2);

    const first = await client.getProfile({ userId });
    assert.deepEqual(
      first.profile?.memories.map((m) => m.topicKey),
      ["profile.name", "drink"],
    );
    assert.deepEqual(
      first.profile?.memories.map((m) => m.id),
      ids,
    );
    const second = await client.getProfile({ userId });
    assert.equal(second.profile?.fromCache, true, "the second GetProfile is served from the cache");
    assert.deepEqual(
      second.profile?.memories.map((m) => m.id),
      ids,
    );

    const recalled = await client.recall({
      userId,
      query: "What should I serve the user to drink?",
      skipProfile: false,
    });
    assert.deepEqual(
      recalled.profile?.memories.map((m) => m.topicKey),
      ["profile.name", "drink"],
    );
    assert.ok(recalled.context.includes("<user_profile>"), `context: ${recalled.context}`);
  });

  it("rejects empty content with a field violation", { skip }, async () => {
    await assert.rejects(
      client.write({ userId: `user-${randomUUID()}`, memories: [{ type: MemoryType.FACT, content: "" }] }),
      (e: unknown) => {
        isCode(Code.InvalidArgument, ErrorReason.INVALID_FIELD)(e);
        const err = e as RecalldError;
        assert.ok(
          err.fieldViolations.some((v) => v.field === "memories[0].content"),
          `violations: ${JSON.stringify(err.fieldViolations)}`,
        );
        return true;
      },
    );
  });

  it("isolates tenants that share a user id", { skip }, async () => {
    const userId = `user-${randomUUID()}`;
    const a = new RecalldClient({ address: addr, tenant: `it-node-a-${run}` });
    const b = new RecalldClient({ address: addr, tenant: `it-node-b-${run}` });
    try {
      const w = await a.write({
        userId,
        memories: [{ type: MemoryType.FACT, content: "Tenant A's secret: the vault code is 4711." }],
      });
      const id = w.results[0]!.id;
      assert.equal((await a.get({ userId, id })).memory?.id, id);

      await assert.rejects(b.get({ userId, id }), isCode(Code.NotFound));
      const recalled = await b.recall({ userId, query: "What is the vault code?", topK: 10, minScore: -1 });
      assert.ok(!recalled.items.some((i) => i.memory?.id === id || i.memory?.content.includes("4711")));
      assert.equal((await b.list({ userId })).memories.length, 0);
      await assert.rejects(b.forget({ userId, ids: [id] }), isCode(Code.NotFound));
      assert.equal((await a.get({ userId, id })).memory?.id, id, "B's forget did not touch A's memory");
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
