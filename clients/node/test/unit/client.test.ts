import assert from "node:assert/strict";
import { createServer } from "node:net";
import { describe, it } from "node:test";
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { context, ROOT_CONTEXT, TraceFlags, trace } from "@opentelemetry/api";
import { BadRequestSchema } from "../../src/gen/google/rpc/error_details_pb.js";
import {
  type AppendMessagesRequest,
  AppendMessagesResponseSchema,
  Code,
  create,
  DEFAULT_ADDRESS,
  DropReason,
  fromJson,
  fromJsonString,
  type GetProfileRequest,
  GetProfileResponseSchema,
  GetResponseSchema,
  isLoopbackHost,
  type JsonObject,
  type ListSessionsRequest,
  ListSessionsResponseSchema,
  type Memory,
  MemorySchema,
  MemoryTier,
  MessageRole,
  MessageSchema,
  RecalldClient,
  RecalldError,
  type RecallRequest,
  RecallResponseSchema,
  resolveTarget,
  toJson,
  toJsonString,
  toMessage,
  type WriteRequest,
  WriteResponseSchema,
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
  it("uses plaintext for IPv4-mapped loopback addresses in every spelling", () => {
    for (const address of [
      "[::ffff:127.0.0.1]:50051",
      "[::FFFF:127.0.0.1]:50051",
      "[0:0:0:0:0:ffff:127.0.0.1]:50051",
      "[::ffff:7f00:1]:50051",
      "dns:///[::ffff:127.0.0.1]:50051",
      "dns:[::ffff:127.0.0.1]:50051",
      "ipv6:[::ffff:127.0.0.1]:50051",
    ]) {
      assert.equal(resolveTarget(address).secure, false, address);
    }
    for (const address of ["[::ffff:10.0.0.1]:50051", "dns:///[::ffff:10.0.0.1]:50051", "ipv6:[::ffff:a00:1]:50051"]) {
      assert.equal(resolveTarget(address).secure, true, address);
    }
  });
  it("takes gRPC target names", () => {
    assert.deepEqual(resolveTarget("ipv4:127.0.0.1:50051"), { baseUrl: "http://127.0.0.1:50051", secure: false });
    assert.deepEqual(resolveTarget("ipv6:[::1]:50051"), { baseUrl: "http://[::1]:50051", secure: false });
    assert.deepEqual(resolveTarget("dns:localhost:50051"), resolveTarget("dns:///localhost:50051"));
    assert.equal(resolveTarget("dns:recalld.prod.svc:443").balancedHost, "recalld.prod.svc");
    assert.throws(() => resolveTarget("dns://8.8.8.8/recalld.prod.svc:443"), /dns:\/\/\/host:port/);
    assert.throws(() => resolveTarget("ipv4:nonsense"), /host:port/);
    assert.throws(() => resolveTarget("[::1"), /host:port/);
  });
  it("takes several replicas as a list, plain or in gRPC's ipv4:/ipv6: forms", () => {
    assert.deepEqual(resolveTarget("10.0.0.1:50051, 10.0.0.2:50051"), {
      baseUrl: "https://10.0.0.1:50051",
      secure: true,
      replicas: ["10.0.0.1:50051", "10.0.0.2:50051"],
    });
    assert.deepEqual(resolveTarget("ipv4:127.0.0.1:7001,127.0.0.2:7001"), {
      baseUrl: "http://127.0.0.1:7001",
      secure: false,
      replicas: ["127.0.0.1:7001", "127.0.0.2:7001"],
    });
    assert.deepEqual(resolveTarget("ipv6:[fd00::1]:50051,[fd00::2]:50051", false).replicas, [
      "[fd00::1]:50051",
      "[fd00::2]:50051",
    ]);
    // TLS unless every replica is a loopback host; an explicit option decides for all.
    assert.equal(resolveTarget("127.0.0.1:1,10.0.0.1:1").secure, true);
    assert.equal(resolveTarget("127.0.0.1:1,10.0.0.1:1", false).secure, false);
    // One distinct address is that address alone, as before.
    assert.deepEqual(resolveTarget("127.0.0.1:1,127.0.0.1:1"), { baseUrl: "http://127.0.0.1:1", secure: false });
    assert.deepEqual(resolveTarget("10.0.0.1:1, ,"), resolveTarget("10.0.0.1:1"), "empty entries are dropped");
    assert.deepEqual(resolveTarget("A.example:1,a.EXAMPLE:1,b.example:1").replicas, ["a.example:1", "b.example:1"]);
    assert.throws(() => resolveTarget(" , "), /no address/);
    assert.throws(() => resolveTarget("10.0.0.1:1,10.0.0.2"), /host:port/);
    assert.throws(() => resolveTarget("http://a:1,http://b:1"), /host:port/);
    assert.throws(() => resolveTarget("dns:///a:1,b:1"), /one host:port/);
  });
});

/** Runs `fn` with the given environment variables set (undefined: unset), then restores them. */
async function withEnv(vars: Record<string, string | undefined>, fn: () => Promise<void> | void): Promise<void> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const apply = (values: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  apply(vars);
  try {
    await fn();
  } finally {
    apply(saved);
  }
}

/** The headers of one Get sent by a client made with `options` (no network). */
async function sentHeaders(options: ConstructorParameters<typeof RecalldClient>[0]): Promise<Headers> {
  const seen: Seen[] = [];
  const client = new RecalldClient({ ...options, interceptors: [failing(Code.NotFound, seen)] });
  await assert.rejects(client.get({ userId: "u", id: "m" }));
  return seen[0]!.header;
}

describe("configuration from the environment", () => {
  it("reads RECALLD_ADDR when the client is made, with 127.0.0.1:50051 as the default", async () => {
    await withEnv({ RECALLD_ADDR: "10.1.2.3:7000" }, () => {
      assert.equal(new RecalldClient().target.baseUrl, "https://10.1.2.3:7000");
      assert.equal(new RecalldClient({ address: undefined }).target.baseUrl, "https://10.1.2.3:7000");
      assert.equal(new RecalldClient({ address: "127.0.0.1:9" }).target.baseUrl, "http://127.0.0.1:9");
    });
    await withEnv({ RECALLD_ADDR: undefined }, () => {
      assert.equal(DEFAULT_ADDRESS, "127.0.0.1:50051");
      assert.equal(new RecalldClient().target.baseUrl, "http://127.0.0.1:50051");
    });
    await withEnv({ RECALLD_ADDR: "" }, () => {
      assert.equal(new RecalldClient().target.baseUrl, "http://127.0.0.1:50051");
    });
  });

  it("reads RECALLD_API_KEY unless an apiKey is given", async () => {
    await withEnv({ RECALLD_API_KEY: "from-env" }, async () => {
      assert.equal((await sentHeaders({})).get("authorization"), "Bearer from-env");
      assert.equal((await sentHeaders({ apiKey: undefined })).get("authorization"), "Bearer from-env");
      assert.equal((await sentHeaders({ apiKey: "explicit" })).get("authorization"), "Bearer explicit");
      const none = await sentHeaders({ apiKey: "", tenant: "acme" });
      assert.equal(none.has("authorization"), false);
      assert.equal(none.get("x-recalld-tenant"), "acme");
    });
    await withEnv({ RECALLD_API_KEY: undefined }, async () => {
      assert.equal((await sentHeaders({})).has("authorization"), false);
    });
  });

  it("refuses a tenant together with an API key, given or from the environment", async () => {
    assert.throws(() => new RecalldClient({ apiKey: "k", tenant: "t" }), /tenant/);
    await withEnv({ RECALLD_API_KEY: "from-env" }, () => {
      assert.throws(() => new RecalldClient({ tenant: "t" }), /RECALLD_API_KEY/);
    });
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

  it("gives Consolidate a 120 s deadline", async () => {
    const deadline = async (options: ConstructorParameters<typeof RecalldClient>[0]): Promise<number> => {
      const seen: Seen[] = [];
      const client = new RecalldClient({ ...options, interceptors: [failing(Code.Internal, seen)] });
      await assert.rejects(client.consolidate({ userId: "u", dryRun: true }));
      return Number.parseInt(seen[0]!.header.get("grpc-timeout")!, 10);
    };
    const byDefault = await deadline({ address: "127.0.0.1:1" });
    assert.ok(byDefault > 110_000 && byDefault <= 120_000, `grpc-timeout ${byDefault}`);
    assert.ok((await deadline({ address: "127.0.0.1:1", consolidateTimeoutMs: 30_000 })) <= 30_000);
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

  it("serialises messages with toJson, where JSON.stringify throws on int64 fields", () => {
    const memory: Memory = create(MemorySchema, {
      id: "m1",
      content: "Prefers oat milk.",
      version: 3n,
      accessCount: 12n,
      createdAt: { seconds: 1_700_000_000n, nanos: 0 },
      metadata: { source: "chat" },
    });
    assert.throws(() => JSON.stringify(memory), /BigInt/);
    const json = toJson(MemorySchema, memory) as JsonObject;
    assert.equal(JSON.stringify(json), toJsonString(MemorySchema, memory));
    assert.deepEqual(
      { version: json.version, accessCount: json.accessCount, createdAt: json.createdAt },
      { version: "3", accessCount: "12", createdAt: "2023-11-14T22:13:20Z" },
    );
    const back = fromJson(MemorySchema, JSON.parse(JSON.stringify(json)));
    assert.equal(back.version, 3n);
    assert.equal(fromJsonString(MemorySchema, toJsonString(MemorySchema, memory)).content, "Prefers oat milk.");
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
      await client.close();
    }
  });
});

/** An innermost interceptor that answers each Write with one result per memory (id = content), recording it. */
function writes(sent: WriteRequest[], fail?: (chunk: number) => ConnectError | undefined): Interceptor {
  return () => async (req) => {
    const message = req.message as WriteRequest;
    sent.push(message);
    const error = fail?.(sent.length - 1);
    if (error) throw error;
    return {
      stream: false,
      service: req.service,
      method: req.method,
      header: new Headers(),
      trailer: new Headers(),
      message: create(WriteResponseSchema, { results: message.memories.map((m) => ({ id: m.content })) }),
    } as never;
  };
}

const memories = (n: number) => Array.from({ length: n }, (_, i) => ({ content: `m${i}` }));

describe("write of more than 100 memories", () => {
  it("sends chunks of at most 100 in order, request ids R#i, and returns one response", async () => {
    const sent: WriteRequest[] = [];
    const client = new RecalldClient({ address: "127.0.0.1:1", interceptors: [writes(sent)] });
    const res = await client.write({ userId: "u", memories: memories(250), requestId: "R" });
    assert.deepEqual(
      sent.map((c) => [c.requestId, c.memories.length, c.userId]),
      [
        ["R#0", 100, "u"],
        ["R#1", 100, "u"],
        ["R#2", 50, "u"],
      ],
    );
    assert.deepEqual(
      res.results.map((r) => r.id),
      memories(250).map((m) => m.content),
    );
  });

  it("leaves a write of up to 100 memories as it is", async () => {
    const sent: WriteRequest[] = [];
    const client = new RecalldClient({ address: "127.0.0.1:1", interceptors: [writes(sent)] });
    await client.write({ userId: "u", memories: memories(100), requestId: "R" });
    assert.deepEqual(
      sent.map((c) => [c.requestId, c.memories.length]),
      [["R", 100]],
    );
  });

  it("sends no request id without one, and then does not retry a chunk", async () => {
    const sent: WriteRequest[] = [];
    const unavailable = (i: number) => (i === 1 ? new ConnectError("down", Code.Unavailable) : undefined);
    const client = new RecalldClient({
      address: "127.0.0.1:1",
      retry: fastRetry,
      interceptors: [writes(sent, unavailable)],
    });
    await assert.rejects(client.write({ userId: "u", memories: memories(201) }), (e: unknown) => {
      assert.ok(e instanceof RecalldError && e.code === Code.Unavailable);
      assert.equal(e.written?.memories, 100);
      return true;
    });
    assert.deepEqual(
      sent.map((c) => c.requestId),
      ["", ""],
    );
  });

  it("refuses a request id too long for its chunk suffixes before sending anything", async () => {
    const sent: WriteRequest[] = [];
    const client = new RecalldClient({ address: "127.0.0.1:1", interceptors: [writes(sent)] });
    // 3 chunks: the last id is R#2, two characters longer than R.
    await assert.rejects(
      client.write({ userId: "u", memories: memories(250), requestId: "r".repeat(127) }),
      (e: unknown) =>
        e instanceof RecalldError &&
        e.code === Code.InvalidArgument &&
        e.fieldViolations[0]?.field === "request_id" &&
        e.fieldViolations[0]?.reason === "TOO_LONG" &&
        e.reason === "INVALID_FIELD" &&
        e.written === undefined,
    );
    assert.equal(sent.length, 0);
    // Characters, as the server counts them: 126 emoji (252 UTF-16 units) plus "#2" is 128.
    await client.write({ userId: "u", memories: memories(250), requestId: "😀".repeat(126) });
    assert.equal(sent.length, 3);
    assert.equal(sent[2]!.requestId, `${"😀".repeat(126)}#2`);
  });

  it("says how much was written when a chunk fails, with field violations indexed in the whole request", async () => {
    const sent: WriteRequest[] = [];
    const invalid = (i: number) =>
      i === 1
        ? new ConnectError("memories[3].content: must not be empty", Code.InvalidArgument, undefined, [
            {
              desc: BadRequestSchema,
              value: { fieldViolations: [{ field: "memories[3].content", description: "must not be empty" }] },
            },
          ])
        : undefined;
    const client = new RecalldClient({ address: "127.0.0.1:1", interceptors: [writes(sent, invalid)] });
    await assert.rejects(client.write({ userId: "u", memories: memories(250), requestId: "R" }), (e: unknown) => {
      assert.ok(e instanceof RecalldError);
      assert.equal(e.code, Code.InvalidArgument);
      assert.equal(e.written?.chunks, 1);
      assert.equal(e.written?.memories, 100);
      assert.deepEqual(
        e.written?.results.map((r) => r.id),
        memories(100).map((m) => m.content),
      );
      assert.deepEqual(
        e.fieldViolations.map((v) => v.field),
        ["memories[103].content"],
      );
      assert.match(e.message, /the first 100 memories, 1 chunk\(s\), were written/);
      assert.equal(e.rawMessage, "memories[103].content: must not be empty");
      return true;
    });
    assert.equal(sent.length, 2, "no chunk after the failed one is sent");
  });
});
