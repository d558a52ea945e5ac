import assert from "node:assert/strict";
import { createServer } from "node:net";
import { describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { context, ROOT_CONTEXT, TraceFlags, trace } from "@opentelemetry/api";
import {
  type AppendMessagesRequest,
  AppendMessagesResponseSchema,
  Code,
  DropReason,
  type GetProfileRequest,
  GetProfileResponseSchema,
  GetResponseSchema,
  isLoopbackHost,
  type ListSessionsRequest,
  ListSessionsResponseSchema,
  MemoryTier,
  MessageRole,
  MessageSchema,
  RecalldClient,
  RecalldError,
  type RecallRequest,
  RecallResponseSchema,
  resolveTarget,
  toMessage,
} from "../../src/index.js";
import { installContextManager } from "./otel-context.js";

/** A loopback port that nothing listens on. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

interface Seen {
  method: string;
  header: Headers;
}

/** An innermost interceptor that records each attempt and fails it with `code` (no network). */
function failing(code: Code, seen: Seen[]): Interceptor {
  return () => async (req) => {
    seen.push({ method: req.method.name, header: new Headers(req.header) });
    throw new ConnectError("injected", code);
  };
}

const fastRetry = { initialBackoffMs: 1, maxBackoffMs: 2, jitter: 0 };

describe("resolveTarget", () => {
  it("uses plaintext for loopback and TLS elsewhere by default", () => {
    assert.deepEqual(resolveTarget("127.0.0.1:50051"), { baseUrl: "http://127.0.0.1:50051", secure: false });
    assert.deepEqual(resolveTarget("localhost:1"), { baseUrl: "http://localhost:1", secure: false });
    assert.deepEqual(resolveTarget("[::1]:50051"), { baseUrl: "http://[::1]:50051", secure: false });
    assert.deepEqual(resolveTarget("recalld.example:443"), { baseUrl: "https://recalld.example:443", secure: true });
  });
  it("follows an explicit tls option or URL scheme", () => {
    assert.equal(resolveTarget("127.0.0.1:50051", true).baseUrl, "https://127.0.0.1:50051");
    assert.equal(resolveTarget("10.0.0.5:50051", false).baseUrl, "http://10.0.0.5:50051");
    assert.equal(resolveTarget("10.0.0.5:50051", { serverName: "x" }).secure, true);
    assert.deepEqual(resolveTarget("https://recalld.example:8443/"), {
      baseUrl: "https://recalld.example:8443",
      secure: true,
    });
    assert.throws(() => resolveTarget("http://h:1", true), TypeError);
    assert.throws(() => resolveTarget("no-port"), TypeError);
  });
  it("balances dns:/// addresses over the name's addresses", () => {
    assert.deepEqual(resolveTarget("dns:///recalld.prod.svc:50051"), {
      baseUrl: "https://recalld.prod.svc:50051",
      secure: true,
      balancedHost: "recalld.prod.svc",
    });
    assert.equal(resolveTarget("dns:///localhost:50051").secure, false);
    assert.equal(resolveTarget("dns:///[::1]:50051").balancedHost, "::1");
    assert.throws(() => resolveTarget("dns:///no-port"), TypeError);
    assert.throws(() => resolveTarget("dns:///https://h:1"), TypeError);
  });
  it("recognises loopback hosts", () => {
    assert.ok(isLoopbackHost("127.1.2.3"));
    assert.ok(isLoopbackHost("[::1]"));
    assert.ok(isLoopbackHost("::ffff:127.0.0.1"));
    assert.ok(isLoopbackHost("[::ffff:7f00:1]"));
    assert.ok(isLoopbackHost("0:0:0:0:0:ffff:127.0.0.2"));
    assert.ok(!isLoopbackHost("::ffff:10.0.0.1"));
    assert.ok(!isLoopbackHost("::ffff:8000:1"));
    assert.ok(!isLoopbackHost("128.0.0.1"));
    assert.ok(!isLoopbackHost("localhost.example"));
  });
});

describe("RecalldClient (no server)", () => {
  it("rejects an API key together with a tenant", () => {
    assert.throws(() => new RecalldClient({ address: "127.0.0.1:1", apiKey: "k", tenant: "t" }), TypeError);
  });

  it("sends the API key, deadline and traceparent of the active span", async () => {
    installContextManager();
    const seen: Seen[] = [];
    const client = new RecalldClient({
      address: "127.0.0.1:1",
      apiKey: "secret",
      interceptors: [failing(Code.NotFound, seen)],
    });
    const parent = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      traceFlags: TraceFlags.SAMPLED,
    });
    await assert.rejects(
      context.with(parent, () => client.get({ userId: "u", id: "m" })),
      (e: unknown) => e instanceof RecalldError && e.code === Code.NotFound,
    );
    assert.equal(seen.length, 1);
    const h = seen[0]!.header;
    assert.equal(h.get("authorization"), "Bearer secret");
    assert.equal(h.has("x-recalld-tenant"), false);
    // No SDK is installed, so the client span is the parent's (non-recording) span.
    assert.equal(h.get("traceparent"), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    const timeout = h.get("grpc-timeout");
    assert.ok(timeout && /^\d+m$/.test(timeout), `grpc-timeout ${timeout}`);
    assert.ok(Number.parseInt(timeout, 10) <= 10_000);
  });

  it("sends the tenant without a key and a 5 s deadline for Recall", async () => {
    const seen: Seen[] = [];
    const client = new RecalldClient({
      address: "127.0.0.1:1",
      tenant: "acme",
      interceptors: [failing(Code.Internal, seen)],
    });
    await assert.rejects(client.recall({ userId: "u", query: "q" }));
    const h = seen[0]!.header;
    assert.equal(h.get("x-recalld-tenant"), "acme");
    assert.equal(h.has("authorization"), false);
    assert.equal(h.has("traceparent"), false);
    assert.ok(Number.parseInt(h.get("grpc-timeout")!, 10) <= 5_000);
  });

  it("retries UNAVAILABLE for reads and Write with a request_id only", async () => {
    const attempts = async (fn: (c: RecalldClient) => Promise<unknown>): Promise<number> => {
      const seen: Seen[] = [];
      const client = new RecalldClient({
        address: "127.0.0.1:1",
        retry: { ...fastRetry, maxAttempts: 3 },
        interceptors: [failing(Code.Unavailable, seen)],
      });
      await assert.rejects(fn(client), (e: unknown) => e instanceof RecalldError && e.codeName === "UNAVAILABLE");
      return seen.length;
    };
    assert.equal(await attempts((c) => c.get({ userId: "u", id: "x" })), 3);
    assert.equal(await attempts((c) => c.list({ userId: "u" })), 3);
    assert.equal(await attempts((c) => c.recall({ userId: "u", query: "q" })), 3);
    assert.equal(await attempts((c) => c.getProfile({ userId: "u" })), 3);
    assert.equal(await attempts((c) => c.write({ userId: "u", memories: [{ content: "c" }] })), 1);
    assert.equal(await attempts((c) => c.write({ userId: "u", memories: [{ content: "c" }], requestId: "r1" })), 3);
    assert.equal(await attempts((c) => c.update({ userId: "u", memory: { id: "x" } })), 1);
    assert.equal(await attempts((c) => c.forget({ userId: "u", ids: ["x"] })), 1);
    assert.equal(await attempts((c) => c.history({ userId: "u", id: "x" })), 3);
    assert.equal(await attempts((c) => c.listConflicts({ userId: "u" })), 3);
    assert.equal(await attempts((c) => c.restore({ userId: "u", ids: ["x"] })), 1);
    assert.equal(await attempts((c) => c.confirm({ userId: "u", ids: ["x"] })), 1);
    assert.equal(await attempts((c) => c.resolveConflict({ userId: "u", conflictId: "x" })), 1);
    assert.equal(await attempts((c) => c.consolidate({ userId: "u", dryRun: true })), 1);
    const messages = [{ role: "user" as const, content: "hi" }];
    assert.equal(await attempts((c) => c.appendMessages({ userId: "u", sessionId: "s", messages })), 1);
    assert.equal(
      await attempts((c) => c.appendMessages({ userId: "u", sessionId: "s", messages, requestId: "r1" })),
      3,
    );
    assert.equal(await attempts((c) => c.getContext({ userId: "u", sessionId: "s" })), 3);
    assert.equal(await attempts((c) => c.getSession({ userId: "u", sessionId: "s" })), 3);
    assert.equal(await attempts((c) => c.listSessions({ userId: "u" })), 3);
    assert.equal(await attempts((c) => c.endSession({ userId: "u", sessionId: "s" })), 1);
  });

  it("does not retry other codes", async () => {
    const seen: Seen[] = [];
    const client = new RecalldClient({
      address: "127.0.0.1:1",
      retry: fastRetry,
      interceptors: [failing(Code.DeadlineExceeded, seen)],
    });
    await assert.rejects(client.get({ userId: "u", id: "x" }));
    assert.equal(seen.length, 1);
  });

  it("keeps retries within the call's deadline", async () => {
    const seen: Seen[] = [];
    const client = new RecalldClient({
      address: "127.0.0.1:1",
      retry: { maxAttempts: 50, initialBackoffMs: 100, maxBackoffMs: 100, jitter: 0 },
      interceptors: [failing(Code.Unavailable, seen)],
    });
    const t0 = Date.now();
    await assert.rejects(client.get({ userId: "u", id: "x" }, { timeoutMs: 350 }));
    const elapsed = Date.now() - t0;
    assert.ok(elapsed < 1000, `took ${elapsed} ms`);
    assert.ok(seen.length >= 2 && seen.length <= 4, `attempts ${seen.length}`);
  });

  it("returns the response of a successful call", async () => {
    const ok: Interceptor = () => async (req) =>
      ({
        stream: false,
        service: req.service,
        method: req.method,
        header: new Headers(),
        trailer: new Headers(),
        message: create(GetResponseSchema, { memory: { id: "m1", content: "hello" } }),
      }) as never;
    const client = new RecalldClient({ address: "127.0.0.1:1", interceptors: [ok] });
    const res = await client.get({ userId: "u", id: "m1" });
    assert.equal(res.memory?.content, "hello");
  });

  it("calls GetProfile with the default (not the Recall) deadline and returns the profile", async () => {
    const seen: { method: string; header: Headers; message: GetProfileRequest }[] = [];
    const ok: Interceptor = () => async (req) => {
      seen.push({
        method: req.method.name,
        header: new Headers(req.header),
        message: req.message as GetProfileRequest,
      });
      return {
        stream: false,
        service: req.service,
        method: req.method,
        header: new Headers(),
        trailer: new Headers(),
        message: create(GetProfileResponseSchema, {
          profile: {
            memories: [
              { id: "m1", tier: MemoryTier.P0, topicKey: "profile.name", content: "Name: Ada" },
              { id: "m2", topicKey: "drink", content: "Prefers tea" },
            ],
            fromCache: true,
          },
          degradedStages: ["profile_cache"],
        }),
      } as never;
    };
    const client = new RecalldClient({ address: "127.0.0.1:1", tenant: "acme", interceptors: [ok] });
    const res = await client.getProfile({ userId: "u", agentScope: "planner" });
    assert.deepEqual(
      res.profile?.memories.map((m) => m.topicKey),
      ["profile.name", "drink"],
    );
    assert.equal(res.profile?.fromCache, true);
    assert.deepEqual(res.degradedStages, ["profile_cache"]);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.method, "GetProfile");
    assert.equal(seen[0]!.message.userId, "u");
    assert.equal(seen[0]!.message.agentScope, "planner");
    const h = seen[0]!.header;
    assert.equal(h.get("x-recalld-tenant"), "acme");
    const timeout = Number.parseInt(h.get("grpc-timeout")!, 10);
    assert.ok(timeout > 5_000 && timeout <= 10_000, `grpc-timeout ${h.get("grpc-timeout")}`);
  });

  it("passes explain and skipProfile to Recall and returns profile, context, candidates and breakdowns", async () => {
    const sent: RecallRequest[] = [];
    const ok: Interceptor = () => async (req) => {
      sent.push(req.message as RecallRequest);
      return {
        stream: false,
        service: req.service,
        method: req.method,
        header: new Headers(),
        trailer: new Headers(),
        message: create(RecallResponseSchema, {
          items: [
            {
              memory: { id: "m1" },
              score: 0.9,
              breakdown: { dense: 0.8, keyword: 1.5, fused: 1, decay: 0.9, importanceWeight: 1 },
            },
          ],
          profile: { memories: [{ id: "p1", topicKey: "profile.name" }] },
          context: "<user_profile>\n- Name: Ada\n</user_profile>",
          candidates: [{ memoryId: "m2", dropReason: DropReason.BELOW_THRESHOLD, breakdown: { dense: 0.05 } }],
        }),
      } as never;
    };
    const client = new RecalldClient({ address: "127.0.0.1:1", interceptors: [ok] });
    const res = await client.recall({ userId: "u", query: "q", explain: true, skipProfile: true });
    await client.recall({ userId: "u", query: "q" });
    assert.deepEqual(
      sent.map((m) => [m.explain, m.skipProfile]),
      [
        [true, true],
        [false, false],
      ],
    );
    assert.ok(Math.abs((res.items[0]?.breakdown?.keyword ?? 0) - 1.5) < 1e-6);
    assert.deepEqual(
      res.profile?.memories.map((m) => m.topicKey),
      ["profile.name"],
    );
    assert.ok(res.context.includes("<user_profile>"));
    assert.equal(res.candidates[0]?.dropReason, DropReason.BELOW_THRESHOLD);
  });

  it("sends session calls to SessionService on the same transport, roles by name or enum", async () => {
    const sent: { service: string; method: string; message: unknown }[] = [];
    const ok: Interceptor = () => async (req) => {
      sent.push({ service: req.service.typeName, method: req.method.name, message: req.message });
      const message =
        req.method.name === "ListSessions"
          ? create(ListSessionsResponseSchema, {
              sessions: [{ sessionId: (req.message as ListSessionsRequest).pageToken || "s1" }],
              nextPageToken: (req.message as ListSessionsRequest).pageToken === "" ? "s2" : "",
            })
          : create(AppendMessagesResponseSchema, { messages: [{ id: "1" }] });
      return {
        stream: false,
        service: req.service,
        method: req.method,
        header: new Headers(),
        trailer: new Headers(),
        message,
      } as never;
    };
    const client = new RecalldClient({ address: "127.0.0.1:1", tenant: "acme", interceptors: [ok] });
    await client.appendMessages({
      userId: "u",
      sessionId: "s",
      messages: [
        { role: "user", content: "hi" },
        { role: MessageRole.ASSISTANT, content: "hello" },
        create(MessageSchema, { role: MessageRole.TOOL, content: "42" }),
      ],
      extract: true,
      requestId: "r1",
    });
    const append = sent[0]!.message as AppendMessagesRequest;
    assert.equal(sent[0]!.service, "recalld.v1.SessionService");
    assert.deepEqual(
      append.messages.map((m) => [m.role, m.content]),
      [
        [MessageRole.USER, "hi"],
        [MessageRole.ASSISTANT, "hello"],
        [MessageRole.TOOL, "42"],
      ],
    );
    assert.equal(append.extract, true);
    assert.equal(append.requestId, "r1");
    const sessions: string[] = [];
    for await (const s of client.listAllSessions({ userId: "u" })) sessions.push(s.sessionId);
    assert.deepEqual(sessions, ["s1", "s2"]);
    assert.deepEqual(
      sent.map((c) => c.method),
      ["AppendMessages", "ListSessions", "ListSessions"],
    );
    assert.throws(
      () => toMessage({ role: "robot" as never, content: "beep" }),
      (e: unknown) => e instanceof TypeError && /robot/.test(e.message),
    );
  });

  it("reports UNAVAILABLE after bounded retries when nothing listens", async () => {
    const port = await closedPort();
    let attempts = 0;
    const count: Interceptor = (next) => async (req) => {
      attempts++;
      return next(req);
    };
    const client = new RecalldClient({ address: `127.0.0.1:${port}`, retry: fastRetry, interceptors: [count] });
    try {
      await assert.rejects(
        client.list({ userId: "u" }, { timeoutMs: 3000 }),
        (e: unknown) => e instanceof RecalldError && e.code === Code.Unavailable,
      );
      assert.equal(attempts, 4);
    } finally {
      client.close();
    }
  });
});
