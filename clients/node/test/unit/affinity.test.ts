// User affinity (docs/routing.md): UserAffinityTransport over fake replicas, and
// RecalldClient routing over a list of addresses with faults injected by an
// interceptor. Both are fakes, for what a unit test cannot otherwise cause: a
// replica that refuses calls from one moment to the next, and a clock that jumps
// over a 30 s back-off. test/unit/affinity-failover.test.ts does the same against
// real HTTP/2 servers, one of them stopped and started again.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { DescMethodUnary } from "@bufbuild/protobuf";
import {
  ConnectError,
  type ContextValues,
  createContextValues,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import type { Member } from "../../src/balancing.js";
import {
  Code,
  create,
  DRAINING_HEADER,
  DRAINING_HOLD_MS,
  Health,
  INITIAL_DOWN_MS,
  MAX_DOWN_MS,
  MemoryService,
  RecalldClient,
  RecalldError,
  ReplicaHealth,
  replicaOrder,
  routingKey,
  UserAffinityTransport,
} from "../../src/index.js";

const REPLICAS = ["10.0.0.1:50051", "10.0.0.2:50051", "10.0.0.3:50051"];
const USERS = Array.from({ length: 30 }, (_, i) => `user-${i}`);
const first = (userId: string) => replicaOrder(REPLICAS, userId)[0]!;

/**
 * Fake replicas: each member answers every call with an empty response of the
 * method's type and records it, or fails it with UNAVAILABLE (as a refused
 * connection does) while its address is in `refusing`, or with the error in
 * `failing`. A replica in `draining` when a call starts sends DRAINING_HEADER in
 * that call's response headers (a failed call's metadata), as a stopping recalld
 * does; a call to a replica in `paused` when it starts waits for that promise before it answers.
 */
class FakeReplicas {
  /** The replica of every attempt, in order. */
  readonly attempts: string[] = [];
  readonly refusing = new Set<string>();
  readonly failing = new Map<string, ConnectError>();
  readonly draining = new Set<string>();
  readonly paused = new Map<string, Promise<void>>();

  readonly connect = (address: string): Member => {
    const transport = {
      unary: async (method: DescMethodUnary) => {
        this.attempts.push(address);
        const header = new Headers(this.draining.has(address) ? { [DRAINING_HEADER]: "1" } : {});
        await this.paused.get(address); // the gate of the moment the call started
        if (this.refusing.has(address)) throw new ConnectError(`connect ECONNREFUSED ${address}`, Code.Unavailable);
        const error = this.failing.get(address);
        if (error !== undefined) {
          // As connect's gRPC transport does: the response headers join the error's metadata.
          const thrown = new ConnectError(error.rawMessage, error.code, new Headers(error.metadata));
          header.forEach((value, key) => {
            thrown.metadata.append(key, value);
          });
          throw thrown;
        }
        const message = create(method.output);
        return {
          stream: false,
          service: method.parent,
          method,
          header,
          trailer: new Headers(),
          message,
        };
      },
      stream: async () => {
        throw new Error("no streaming RPC");
      },
    } as unknown as Transport;
    return { address, transport, close: async () => {} };
  };

  attemptsOn(address: string): number {
    return this.attempts.filter((a) => a === address).length;
  }

  /** Calls to `address` from now on (until `paused` forgets it) wait for the returned function to be called. */
  pause(address: string): () => void {
    let release!: () => void;
    this.paused.set(
      address,
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    return release;
  }
}

/** A transport over REPLICAS with a clock the test sets. */
function affinity(fake: FakeReplicas, clock: { now: number }): UserAffinityTransport {
  return new UserAffinityTransport(
    "replicas",
    fake.connect,
    async () => REPLICAS,
    undefined,
    () => clock.now,
  );
}

/** Sends one List for `userId` (`contextValues` shared by the attempts of one call) and says which replica took it. */
async function listFor(
  transport: Transport,
  fake: FakeReplicas,
  userId: string,
  contextValues?: ContextValues,
): Promise<string> {
  await transport.unary(MemoryService.method.list, undefined, undefined, undefined, { userId }, contextValues);
  return fake.attempts.at(-1)!;
}

const isUnavailable = (e: unknown) => ConnectError.from(e).code === Code.Unavailable;

describe("UserAffinityTransport", () => {
  it("sends every call of a user to the first replica of its order, and users over all replicas", async () => {
    const fake = new FakeReplicas();
    const transport = affinity(fake, { now: 0 });
    for (const userId of [...USERS, ...USERS]) assert.equal(await listFor(transport, fake, userId), first(userId));
    assert.deepEqual(new Set(USERS.map(first)), new Set(REPLICAS), "30 users land on every replica");
  });

  it("moves only the users of a replica that is down, each to its own next replica", async () => {
    const fake = new FakeReplicas();
    const clock = { now: 0 };
    const transport = affinity(fake, clock);
    const victim = REPLICAS[1]!;
    const victims = USERS.filter((u) => first(u) === victim);
    assert.ok(victims.length > 0 && victims.length < USERS.length);
    fake.refusing.add(victim);
    await assert.rejects(listFor(transport, fake, victims[0]!), isUnavailable);
    const failed = fake.attemptsOn(victim);
    clock.now = INITIAL_DOWN_MS - 1;
    for (const userId of USERS) {
      const order = replicaOrder(REPLICAS, userId);
      assert.equal(await listFor(transport, fake, userId), order[0] === victim ? order[1] : order[0], userId);
    }
    assert.equal(fake.attemptsOn(victim), failed, "no call goes to a replica during its back-off");
  });

  it("tries a replica again after its back-off, doubling it while it keeps failing, and a success brings it back", async () => {
    const fake = new FakeReplicas();
    const clock = { now: 0 };
    const transport = affinity(fake, clock);
    const victim = REPLICAS[0]!;
    const userId = USERS.find((u) => first(u) === victim)!;
    const next = replicaOrder(REPLICAS, userId)[1]!;
    fake.refusing.add(victim);
    await assert.rejects(listFor(transport, fake, userId), isUnavailable); // down for 1 s
    clock.now = 999;
    assert.equal(await listFor(transport, fake, userId), next);
    clock.now = 1000;
    await assert.rejects(listFor(transport, fake, userId), isUnavailable); // tried again, down for 2 s
    assert.equal(fake.attemptsOn(victim), 2);
    clock.now = 2999;
    assert.equal(await listFor(transport, fake, userId), next);
    fake.refusing.delete(victim);
    clock.now = 3000;
    assert.equal(await listFor(transport, fake, userId), victim, "back after the back-off");
    clock.now = 3001;
    for (const u of USERS) assert.equal(await listFor(transport, fake, u), first(u), u);
  });

  it("holds a draining replica out of every user's order for 30 s, not as a failure", async () => {
    const fake = new FakeReplicas();
    const clock = { now: 0 };
    const transport = affinity(fake, clock);
    const victim = REPLICAS[1]!;
    const victims = USERS.filter((u) => first(u) === victim);
    const userId = victims[0]!;
    const next = replicaOrder(REPLICAS, userId)[1]!;
    // Two calls already running on the victim when it begins to stop: they answer without the notice.
    const tick = () => new Promise((resolve) => setImmediate(resolve));
    const answerSucceeding = fake.pause(victim);
    const succeeding = listFor(transport, fake, userId);
    await tick();
    const answerFailing = fake.pause(victim);
    const failing = assert.rejects(listFor(transport, fake, userId), isUnavailable);
    await tick();
    fake.paused.delete(victim);
    assert.equal(fake.attemptsOn(victim), 2);
    fake.draining.add(victim);
    // Its answer says it is draining: the call succeeds on it, the next ones go elsewhere.
    clock.now = 1_000;
    assert.equal(await listFor(transport, fake, userId), victim);
    for (const u of USERS) {
      const order = replicaOrder(REPLICAS, u);
      assert.equal(await listFor(transport, fake, u), order[0] === victim ? order[1] : order[0], u);
    }
    assert.equal(fake.attemptsOn(victim), 3);
    // The call in flight succeeds without the notice: the hold stays.
    clock.now = 2_000;
    answerSucceeding();
    await succeeding;
    assert.equal(await listFor(transport, fake, userId), next);
    // The other fails as a stopped replica's calls do: the hold neither shortens nor lengthens.
    fake.refusing.add(victim);
    answerFailing();
    await failing;
    clock.now = 1_000 + DRAINING_HOLD_MS - 1;
    for (const u of victims) assert.equal(await listFor(transport, fake, u), replicaOrder(REPLICAS, u)[1], u);
    assert.equal(fake.attemptsOn(victim), 3, "no call goes to a draining replica during its hold");
    // After the hold it is tried again: a restarted replica at the address takes its users back.
    fake.refusing.delete(victim);
    fake.draining.delete(victim);
    clock.now = 1_000 + DRAINING_HOLD_MS;
    for (const u of USERS) assert.equal(await listFor(transport, fake, u), first(u), u);
  });

  it("holds a replica out when a failed call's metadata says it is draining, and throws the error as usual", async () => {
    const fake = new FakeReplicas();
    const clock = { now: 0 };
    const transport = affinity(fake, clock);
    const victim = REPLICAS[2]!;
    const userId = USERS.find((u) => first(u) === victim)!;
    fake.draining.add(victim);
    fake.failing.set(victim, new ConnectError("no memory m", Code.NotFound));
    await assert.rejects(listFor(transport, fake, userId), (e: unknown) => {
      assert.equal(ConnectError.from(e).code, Code.NotFound);
      assert.equal(ConnectError.from(e).metadata.get(DRAINING_HEADER), "1");
      return true;
    });
    clock.now = DRAINING_HOLD_MS - 1;
    assert.equal(await listFor(transport, fake, userId), replicaOrder(REPLICAS, userId)[1]);
    clock.now = DRAINING_HOLD_MS;
    fake.failing.delete(victim);
    fake.draining.delete(victim);
    assert.equal(await listFor(transport, fake, userId), victim);
  });

  it("sends the retries of one call to the user's next replicas, in order, and round again when all are down", async () => {
    const fake = new FakeReplicas();
    const transport = affinity(fake, { now: 0 });
    for (const r of REPLICAS) fake.refusing.add(r);
    const userId = USERS[0]!;
    const order = replicaOrder(REPLICAS, userId);
    const call = createContextValues(); // what RecalldClient passes to every attempt of one call
    for (let attempt = 0; attempt < 4; attempt++) {
      await assert.rejects(listFor(transport, fake, userId, call), isUnavailable);
    }
    assert.deepEqual(fake.attempts, [...order, order[0]]);
    // A new call with every replica down still tries them, in the user's order.
    fake.refusing.delete(order[1]!);
    const again = createContextValues();
    await assert.rejects(listFor(transport, fake, userId, again), isUnavailable);
    assert.equal(await listFor(transport, fake, userId, again), order[1]);
    assert.deepEqual(fake.attempts.slice(4), [order[0], order[1]]);
  });

  it("sends calls that name no user (the health check) to the replicas in turn", async () => {
    const fake = new FakeReplicas();
    const transport = affinity(fake, { now: 0 });
    const check = async () => {
      await transport.unary(Health.method.check, undefined, undefined, undefined, { service: "" });
      return fake.attempts.at(-1)!;
    };
    assert.deepEqual(new Set([await check(), await check(), await check()]), new Set(REPLICAS));
  });

  it("follows a new resolution: a replica that goes hands on its users, one that comes takes its share", async () => {
    const fake = new FakeReplicas();
    let resolved = REPLICAS.slice(0, 2);
    const transport = new UserAffinityTransport("svc", fake.connect, async () => resolved, 0);
    for (const u of USERS) assert.equal(await listFor(transport, fake, u), replicaOrder(resolved, u)[0]);
    resolved = REPLICAS;
    const moved: string[] = [];
    for (const u of USERS) {
      const now = await listFor(transport, fake, u);
      assert.equal(now, first(u));
      if (now !== replicaOrder(REPLICAS.slice(0, 2), u)[0]) moved.push(u);
    }
    assert.ok(
      moved.every((u) => first(u) === REPLICAS[2]),
      "only users of the new replica move",
    );
    assert.ok(moved.length > 0);
  });
});

describe("ReplicaHealth", () => {
  it("backs off 1 s, doubling to 30 s while the replica keeps failing; a success resets it", () => {
    const clock = { now: 0 };
    const health = new ReplicaHealth(() => clock.now);
    const backoffs: number[] = [];
    for (let i = 0; i < 8; i++) {
      const start = clock.now;
      health.markDown("r");
      health.markDown("r"); // a second failure during the back-off does not lengthen it
      while (!health.isUp("r")) clock.now += 1;
      backoffs.push(clock.now - start);
    }
    assert.deepEqual(backoffs, [1000, 2000, 4000, 8000, 16000, MAX_DOWN_MS, MAX_DOWN_MS, MAX_DOWN_MS]);
    health.markUp("r");
    const start = clock.now;
    health.markDown("r");
    while (!health.isUp("r")) clock.now += 1;
    assert.equal(clock.now - start, INITIAL_DOWN_MS);
  });
});

describe("ReplicaHealth draining", () => {
  it("holds a draining replica out for DRAINING_HOLD_MS whatever answers in between, then backs off anew", () => {
    const clock = { now: 5_000 };
    const health = new ReplicaHealth(() => clock.now);
    health.markDraining("r");
    assert.equal(health.isUp("r"), false);
    clock.now += 1_000;
    health.markUp("r"); // a call that was in flight succeeds
    assert.equal(health.isUp("r"), false);
    health.markDown("r"); // one that fails
    clock.now = 5_000 + DRAINING_HOLD_MS - 1;
    assert.equal(health.isUp("r"), false);
    clock.now = 5_000 + DRAINING_HOLD_MS;
    assert.equal(health.isUp("r"), true, "back after the hold");
    // A failure after the hold (nothing restarted at the address) starts the back-off afresh.
    health.markDown("r");
    const start = clock.now;
    while (!health.isUp("r")) clock.now += 1;
    assert.equal(clock.now - start, INITIAL_DOWN_MS);
  });

  it("holds a replica in its back-off for 30 s from the notice, and a success after the hold ends it", () => {
    const clock = { now: 0 };
    const health = new ReplicaHealth(() => clock.now);
    health.markDown("r");
    health.markDraining("r");
    clock.now = INITIAL_DOWN_MS;
    assert.equal(health.isUp("r"), false);
    clock.now = DRAINING_HOLD_MS;
    health.markUp("r");
    health.markDown("r");
    assert.equal(health.isUp("r"), false);
    clock.now += INITIAL_DOWN_MS;
    assert.equal(health.isUp("r"), true, "a success cleared the draining state: back-off from the start");
  });
});

interface Sent {
  host: string;
  header: Headers;
}

/**
 * An innermost interceptor standing in for the replicas (no network): it
 * records the replica (host of the request URL) and headers of every attempt,
 * answers with an empty response, or fails with UNAVAILABLE for a host in
 * `refusing`.
 */
function replicas(sent: Sent[], refusing: ReadonlySet<string> = new Set()): Interceptor {
  return () => async (req) => {
    const host = new URL(req.url).host;
    sent.push({ host, header: new Headers(req.header) });
    if (refusing.has(host)) throw new ConnectError(`connect ECONNREFUSED ${host}`, Code.Unavailable);
    const message = create(req.method.output);
    return {
      stream: false,
      service: req.service,
      method: req.method,
      header: new Headers(),
      trailer: new Headers(),
      message,
    } as never;
  };
}

const LOOPBACK = ["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"];
const fastRetry = { initialBackoffMs: 1, maxBackoffMs: 2, jitter: 0 };

describe("RecalldClient over several replicas", () => {
  it("routes by user by default and sends x-recalld-user", async () => {
    const sent: Sent[] = [];
    const client = new RecalldClient({ address: LOOPBACK.join(","), interceptors: [replicas(sent)] });
    for (const userId of USERS.slice(0, 10)) {
      await client.list({ userId });
      await client.recall({ userId, query: "q" });
      const last = sent.slice(-2);
      assert.deepEqual(
        last.map((s) => s.host),
        [0, 1].map(() => replicaOrder(LOOPBACK, userId)[0]),
      );
      for (const s of last) assert.equal(s.header.get("x-recalld-user"), routingKey(userId));
    }
    await client.close();
  });

  it("retries on the user's next replica, then keeps away from the one that failed", async () => {
    const sent: Sent[] = [];
    const userId = "alice";
    const order = replicaOrder(LOOPBACK, userId);
    const client = new RecalldClient({
      address: `ipv4:${LOOPBACK.join(",")}`,
      retry: fastRetry,
      interceptors: [replicas(sent, new Set([order[0]!]))],
    });
    await client.getProfile({ userId });
    assert.deepEqual(
      sent.map((s) => s.host),
      order.slice(0, 2),
    );
    await client.get({ userId, id: "m" });
    assert.deepEqual(
      sent.map((s) => s.host),
      [...order.slice(0, 2), order[1]],
    );
    await client.close();
  });

  it("tries every replica in the user's order when all are down, then fails with UNAVAILABLE", async () => {
    const sent: Sent[] = [];
    const userId = "bob";
    const client = new RecalldClient({
      address: LOOPBACK.join(","),
      retry: fastRetry,
      interceptors: [replicas(sent, new Set(LOOPBACK))],
    });
    await assert.rejects(
      client.list({ userId }),
      (e: unknown) => e instanceof RecalldError && e.code === Code.Unavailable,
    );
    const order = replicaOrder(LOOPBACK, userId);
    assert.deepEqual(
      sent.map((s) => s.host),
      [...order, order[0]],
    );
    await client.close();
  });

  it("spreads calls over the replicas in turn with routing round_robin", async () => {
    const sent: Sent[] = [];
    const client = new RecalldClient({
      address: LOOPBACK.join(","),
      routing: "round_robin",
      interceptors: [replicas(sent)],
    });
    for (let i = 0; i < 6; i++) await client.list({ userId: "carol" });
    assert.deepEqual(
      sent.map((s) => s.host),
      [...LOOPBACK, ...LOOPBACK],
    );
    assert.equal(sent[0]!.header.get("x-recalld-user"), routingKey("carol"));
    await client.close();
  });

  it("names listed replicas trimmed and lowercased, as the other clients hash them", async () => {
    const sent: Sent[] = [];
    const client = new RecalldClient({
      address: " Replica-A.example:7001 ,replica-b.EXAMPLE:7001,, replica-a.example:7001",
      tls: false,
      interceptors: [replicas(sent)],
    });
    const named = ["replica-a.example:7001", "replica-b.example:7001"];
    for (const userId of USERS.slice(0, 8)) {
      await client.list({ userId });
      assert.equal(sent.at(-1)!.host, replicaOrder(named, userId)[0]);
    }
    await client.close();
  });

  it("names the replicas of a dns:/// name by address and port", async () => {
    const sent: Sent[] = [];
    const client = new RecalldClient({
      address: "dns:///recalld-headless.invalid:50051",
      tls: false,
      resolveAddresses: async () => ["10.0.0.7", "fd00::7"],
      interceptors: [replicas(sent)],
    });
    const named = ["10.0.0.7:50051", "[fd00::7]:50051"];
    for (const userId of USERS.slice(0, 8)) {
      await client.list({ userId });
      assert.equal(sent.at(-1)!.host, replicaOrder(named, userId)[0]);
    }
    assert.equal(new Set(sent.map((s) => s.host)).size, 2);
    await client.close();
  });

  it("sends x-recalld-user to a single address too, and none without a user or with the health check", async () => {
    const sent: Sent[] = [];
    const client = new RecalldClient({ address: "127.0.0.1:7001", interceptors: [replicas(sent)] });
    await client.consolidate({ userId: "Ünïcødé" });
    assert.equal(sent[0]!.header.get("x-recalld-user"), routingKey("Ünïcødé"));
    await client.raw.forget({ wholeTenant: true });
    assert.equal(sent[1]!.header.has("x-recalld-user"), false, "no user, no header");
    await client.health();
    assert.equal(sent[2]!.header.has("x-recalld-user"), false);
    await client.close();
  });

  it("refuses an unknown routing", () => {
    assert.throws(
      () => new RecalldClient({ address: LOOPBACK.join(","), routing: "random" as "round_robin" }),
      /routing must be one of user, round_robin/,
    );
  });
});
