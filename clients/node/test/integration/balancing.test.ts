// Per-call balancing of a `dns:///` address against two live replicas that share
// nothing: RECALLD_ADDR (127.0.0.1:P) and RECALLD_ADDR_REPLICA (127.0.0.2:P, the
// same port on another loopback address, as a headless Service's pods share a
// port). scripts/test.sh starts both. Skipped when RECALLD_ADDR_REPLICA is unset.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import { MemoryType, RecalldClient } from "../../src/index.js";

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
  it("spread calls round robin over every address the name resolves to", { skip }, async () => {
    const port = new URL(`http://${first}`).port;
    const hosts = [new URL(`http://${first}`).hostname, new URL(`http://${second}`).hostname];
    assert.equal(new URL(`http://${second}`).port, port, "both replicas listen on one port");
    const tenant = `balanced-${randomUUID().slice(0, 8)}`;
    const resolved: string[] = [];
    const client = new RecalldClient({
      address: `dns:///replicas.recalld.invalid:${port}`,
      tenant,
      tls: false, // not a loopback name, so TLS would be the default
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
