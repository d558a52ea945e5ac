// Integration tests against a live recalld server without API keys (loopback),
// e.g. `recalld serve --host 127.0.0.1 --port 50051 --data-dir /tmp/recalld-it`
// then `RECALLD_ADDR=127.0.0.1:50051 npm test`. Skipped when RECALLD_ADDR is unset.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import {
  Code,
  ErrorReason,
  ForgetMode,
  MemoryTier,
  MemoryType,
  RecalldClient,
  RecalldError,
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
      a.close();
      b.close();
    }
  });
});
