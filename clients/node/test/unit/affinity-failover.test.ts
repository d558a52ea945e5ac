// User affinity against real HTTP/2 gRPC servers in this process (connect-node's
// server side, a MemoryService whose List records who asked): each user's calls
// reach the replica of its rendezvous order; with one server stopped its users'
// calls fail over to their next replica (a refused connection, retried) and the
// others stay; started again, it gets its users back after the back-off.
import assert from "node:assert/strict";
import { createServer, type Http2Server, type Http2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import { after, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { INITIAL_DOWN_MS, MemoryService, RecalldClient, replicaOrder } from "../../src/index.js";

interface Replica {
  readonly address: string;
  /** The user of every List this replica answered. */
  served: string[];
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
}

async function replica(): Promise<Replica> {
  const state = { served: [] as string[], port: 0, server: undefined as Http2Server | undefined };
  const handler = connectNodeAdapter({
    grpc: true,
    grpcWeb: false,
    connect: false,
    routes: (router) =>
      router.service(MemoryService, {
        async list(req) {
          state.served.push(req.userId);
          return {};
        },
      }),
  });
  const sessions = new Set<Http2Session>();
  const start = async () => {
    const server = createServer(handler);
    server.on("session", (session: Http2Session) => {
      sessions.add(session);
      session.on("close", () => sessions.delete(session));
    });
    await new Promise<void>((resolve) => server.listen(state.port, "127.0.0.1", resolve));
    state.port = (server.address() as AddressInfo).port;
    state.server = server;
  };
  await start();
  return {
    get address() {
      return `127.0.0.1:${state.port}`;
    },
    get served() {
      return state.served;
    },
    set served(value: string[]) {
      state.served = value;
    },
    start,
    async stop() {
      const server = state.server;
      if (server === undefined) return;
      state.server = undefined;
      for (const session of sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("user affinity over real servers", () => {
  const running: Replica[] = [];
  after(async () => {
    await Promise.all(running.map((r) => r.stop()));
  });

  it("keeps each user on its replica, fails over when one stops and moves back when it returns", async () => {
    for (let i = 0; i < 3; i++) running.push(await replica());
    const addresses = running.map((r) => r.address);
    const users = Array.from({ length: 24 }, (_, i) => `user-${i}`);
    const order = new Map(users.map((u) => [u, replicaOrder(addresses, u)]));
    const client = new RecalldClient({ address: addresses.join(",") });
    /** Which replica answered each user's List, by address. */
    const answered = async (): Promise<Map<string, string>> => {
      for (const r of running) r.served = [];
      for (const userId of users) await client.list({ userId });
      return new Map(running.flatMap((r) => r.served.map((u) => [u, r.address] as const)));
    };
    try {
      const before = await answered();
      for (const u of users) assert.equal(before.get(u), order.get(u)![0], u);
      assert.equal(new Set(before.values()).size, 3, "users land on every replica");

      const stopped = running[1]!;
      await stopped.stop();
      await sleep(100); // the client sees its connection to the stopped server close
      const during = await answered();
      for (const u of users) {
        const [firstChoice, secondChoice] = order.get(u)!;
        assert.equal(during.get(u), firstChoice === stopped.address ? secondChoice : firstChoice, u);
      }
      assert.ok(users.some((u) => order.get(u)![0] === stopped.address));

      await stopped.start();
      await sleep(INITIAL_DOWN_MS + 100);
      const afterwards = await answered();
      for (const u of users) assert.equal(afterwards.get(u), order.get(u)![0], u);
    } finally {
      await client.close();
    }
  });
});
