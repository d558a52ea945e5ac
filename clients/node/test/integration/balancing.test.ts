// Per-call balancing against two live replicas that share nothing: RECALLD_ADDR
// (127.0.0.1:P) and RECALLD_ADDR_REPLICA (127.0.0.2:P, the same port on another
// loopback address, as a headless Service's pods share a port). scripts/test.sh
// starts both. Skipped when RECALLD_ADDR_REPLICA is unset. A third replica that is
// down is 127.0.0.3:P, where nothing listens (the connection is refused, as it is
// by a stopped server); test/unit/affinity-failover.test.ts stops and restarts
// real in-process servers. The draining test starts two replicas of its own
// (`python -m recalld_server serve`, the Python of scripts/test.sh on PATH) and
// stops one with SIGTERM.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { Interceptor } from "@connectrpc/connect";
import { MemoryType, RecalldClient, replicaOrder } from "../../src/index.js";

const first = process.env.RECALLD_ADDR ?? "";
const second = process.env.RECALLD_ADDR_REPLICA ?? "";
const skip =
  first === "" || second === ""
    ? "RECALLD_ADDR and RECALLD_ADDR_REPLICA (same port, another address) are unset"
    : false;

/** How many of `users` have a memory on the replica at `address`. */
async function usersOn(address: string, tenant: string, users: string[]): Promise<number> {
  const direct = new RecalldClient({ address, tenant });
  try {
    let found = 0;
    for (const userId of users) found += (await direct.list({ userId })).memories.length > 0 ? 1 : 0;
    return found;
  } finally {
    await direct.close();
  }
}

describe("dns:/// addresses", () => {
  it("with routing round_robin, spread calls over every address the name resolves to", { skip }, async () => {
    const port = new URL(`http://${first}`).port;
    const hosts = [new URL(`http://${first}`).hostname, new URL(`http://${second}`).hostname];
    assert.equal(new URL(`http://${second}`).port, port, "both replicas listen on one port");
    const tenant = `balanced-${randomUUID().slice(0, 8)}`;
    const resolved: string[] = [];
    const client = new RecalldClient({
      address: `dns:///replicas.recalld.invalid:${port}`,
      tenant,
      tls: false, // not a loopback name, so TLS would be the default
      routing: "round_robin",
      resolveAddresses: async (host) => {
        resolved.push(host);
        return hosts;
      },
    });
    const users = Array.from({ length: 10 }, (_, i) => `user-${i}`);
    try {
      for (const userId of users) {
        await client.write({ userId, memories: [{ type: MemoryType.FACT, content: `Fact about ${userId}` }] });
      }
    } finally {
      await client.close();
    }
    assert.deepEqual(resolved, ["replicas.recalld.invalid"]); // once, then reused
    const counts = [await usersOn(first, tenant, users), await usersOn(second, tenant, users)];
    assert.deepEqual(counts, [5, 5], "alternate writes went to alternate replicas");
  });

  it("resolve through the system resolver by default", {
    skip: first === "" ? "RECALLD_ADDR is unset" : false,
  }, async () => {
    const port = new URL(`http://${first}`).port;
    const client = new RecalldClient({
      address: `dns:///localhost:${port}`,
      tenant: `dns-${randomUUID().slice(0, 8)}`,
      tls: false,
    });
    try {
      // localhost may also resolve to ::1, where nothing listens: retries move on.
      for (let i = 0; i < 4; i++) {
        const page = await client.list({ userId: "nobody" });
        assert.equal(page.memories.length, 0);
      }
    } finally {
      await client.close();
    }
  });
});

/** The first users (`user-0`, `user-1`, …) whose replica order over `replicas` satisfies `wanted`, `count` of them. */
function usersWhose(replicas: string[], wanted: (order: string[]) => boolean, count: number): string[] {
  const found: string[] = [];
  for (let i = 0; found.length < count; i++) if (wanted(replicaOrder(replicas, `user-${i}`))) found.push(`user-${i}`);
  return found;
}

/** Whether the replica at `address` holds a memory of `userId`. */
async function holds(address: string, tenant: string, userId: string): Promise<boolean> {
  return (await usersOn(address, tenant, [userId])) === 1;
}

describe("user affinity over the live replicas", () => {
  it("sends each user's calls to the first replica of its order", { skip }, async () => {
    const replicas = [first, second];
    const tenant = `affinity-${randomUUID().slice(0, 8)}`;
    const users = [
      ...usersWhose(replicas, (order) => order[0] === first, 3),
      ...usersWhose(replicas, (order) => order[0] === second, 3),
    ];
    const client = new RecalldClient({ address: replicas.join(","), tenant });
    try {
      for (const userId of users) {
        await client.write({ userId, memories: [{ type: MemoryType.FACT, content: `Fact about ${userId}` }] });
        await client.recall({ userId, query: "fact" });
      }
    } finally {
      await client.close();
    }
    for (const userId of users) {
      const [home, other] = replicaOrder(replicas, userId);
      assert.ok(await holds(home!, tenant, userId), `${userId} on ${home}`);
      assert.ok(!(await holds(other!, tenant, userId)), `${userId} not on ${other}`);
    }
  });

  it("routes a dns:/// name's addresses by user as well", { skip }, async () => {
    const port = new URL(`http://${first}`).port;
    const tenant = `affinity-dns-${randomUUID().slice(0, 8)}`;
    const users = usersWhose([first, second], (order) => order[0] === second, 2);
    const client = new RecalldClient({
      address: `dns:///replicas.recalld.invalid:${port}`,
      tenant,
      tls: false,
      resolveAddresses: async () => [new URL(`http://${first}`).hostname, new URL(`http://${second}`).hostname],
    });
    try {
      for (const userId of users) {
        await client.write({ userId, memories: [{ type: MemoryType.FACT, content: `Fact about ${userId}` }] });
      }
    } finally {
      await client.close();
    }
    for (const userId of users) assert.ok(await holds(second, tenant, userId), `${userId} on ${second}`);
  });

  it("moves the users of a replica that is down to their next replica, and only them", { skip }, async () => {
    const down = `127.0.0.3:${new URL(`http://${first}`).port}`;
    const replicas = [first, second, down];
    const tenant = `failover-${randomUUID().slice(0, 8)}`;
    const [refused, skipped] = usersWhose(replicas, (order) => order[0] === down, 2);
    const [stays] = usersWhose(replicas, (order) => order[0] !== down, 1);
    const attempts: string[] = [];
    const count: Interceptor = (next) => async (req) => {
      attempts.push(new URL(req.url).host);
      return next(req);
    };
    const client = new RecalldClient({ address: replicas.join(","), tenant, interceptors: [count] });
    try {
      for (const userId of [refused!, skipped!, stays!]) {
        await client.write({
          userId,
          requestId: `fact-${userId}`, // retried on UNAVAILABLE, like reads
          memories: [{ type: MemoryType.FACT, content: `Fact about ${userId}` }],
        });
      }
    } finally {
      await client.close();
    }
    const next = (userId: string) => replicaOrder(replicas, userId)[1]!;
    // The first call refused by the down replica is retried on the user's next one; after that
    // the down replica is skipped without an attempt.
    assert.deepEqual(attempts, [down, next(refused!), next(skipped!), replicaOrder(replicas, stays!)[0]]);
    assert.ok(await holds(next(refused!), tenant, refused!));
    assert.ok(await holds(next(skipped!), tenant, skipped!));
    assert.ok(await holds(replicaOrder(replicas, stays!)[0]!, tenant, stays!));
  });
});

/** A recalld replica this test started, as scripts/test.sh starts the shared ones. */
interface OwnReplica {
  readonly address: string;
  readonly process: ChildProcess;
  /** Resolves with the exit code once the process has exited. */
  readonly exited: Promise<number | null>;
  /** What it printed (for a failed assertion). */
  readonly output: () => string;
}

/** Starts `python -m recalld_server serve` on 127.0.0.1 (any port, in-memory storage) and waits for it to listen. */
async function startReplica(dataDir: string, shutdownGraceS: number): Promise<OwnReplica> {
  const child = spawn(
    "python",
    [
      ...["-m", "recalld_server", "serve", "--host", "127.0.0.1", "--port", "0", "--storage", "memory"],
      ...["--data-dir", dataDir, "--consolidate-interval", "0", "--shutdown-grace", String(shutdownGraceS)],
    ],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, PYTHONUNBUFFERED: "1" } },
  );
  let output = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`replica did not start in 60 s:\n${output}`));
    }, 60_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const listening = /recalld listening on (127\.0\.0\.1:\d+)/.exec(output);
      if (listening) {
        clearTimeout(timer);
        resolve(listening[1]!);
      }
    };
    child.stdout.on("data", read);
    child.stderr.on("data", read);
    child.once("error", reject);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`replica exited (${code}) before it listened:\n${output}`));
    });
  });
  return { address, process: child, exited, output: () => output };
}

describe("a draining replica", () => {
  it("hands its users to their next replica at its first answer: no call fails, it exits inside its grace", {
    skip,
  }, async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), "recalld-draining-"));
    const started: OwnReplica[] = [];
    try {
      const starting = await Promise.allSettled([0, 1].map((i) => startReplica(join(dataDir, String(i)), 30)));
      for (const r of starting) if (r.status === "fulfilled") started.push(r.value);
      for (const r of starting) if (r.status === "rejected") throw r.reason;
      const [stopping, staying] = started as [OwnReplica, OwnReplica];
      const replicas = [stopping.address, staying.address];
      const tenant = `draining-${randomUUID().slice(0, 8)}`;
      const moved = usersWhose(replicas, (order) => order[0] === stopping.address, 4);
      const stays = usersWhose(replicas, (order) => order[0] === staying.address, 2);
      const client = new RecalldClient({ address: replicas.join(","), tenant });
      const failures: unknown[] = [];
      let tookMs = Number.POSITIVE_INFINITY;
      try {
        for (const userId of [...moved, ...stays]) await client.list({ userId });
        // SIGTERM with a 30 s grace: replica 0 keeps serving until no call has run for a moment.
        const began = Date.now();
        stopping.process.kill("SIGTERM");
        let exited = false;
        void stopping.exited.then(() => {
          exited = true;
        });
        // Calls keep coming for its users; without the notice they would keep it busy for the whole grace.
        for (let round = 0; !exited && Date.now() - began < 10_000; round++) {
          const results = await Promise.allSettled([
            ...[...moved, ...stays].map((userId) => client.list({ userId })),
            client.write({
              userId: moved[0]!,
              requestId: `draining-${round}`,
              memories: [{ type: MemoryType.FACT, content: `Written while replica 0 drains, round ${round}` }],
            }),
          ]);
          for (const r of results) if (r.status === "rejected") failures.push(r.reason);
          await sleep(20);
        }
        if (exited) tookMs = Date.now() - began;
        t.diagnostic(
          exited ? `replica 0 exited ${tookMs} ms after SIGTERM` : "replica 0 still runs 10 s after SIGTERM",
        );
      } finally {
        await client.close();
      }
      assert.deepEqual(failures, [], "no call failed while the replica drained");
      assert.ok(tookMs < 10_000, `replica 0 did not exit within 10 s of SIGTERM (grace 30 s):\n${stopping.output()}`);
      assert.equal(await stopping.exited, 0);
      // Its users' calls went to their next replica: the writes made meanwhile are there.
      assert.ok(await holds(staying.address, tenant, moved[0]!), `${moved[0]} written on ${staying.address}`);
    } finally {
      for (const r of started) {
        if (r.process.exitCode === null && r.process.signalCode === null) r.process.kill("SIGKILL");
      }
      await Promise.all(started.map((r) => r.exited));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
