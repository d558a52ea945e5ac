import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Transport } from "@connectrpc/connect";
import { type Member, RoundRobinTransport } from "../../src/balancing.js";
import { RecalldError } from "../../src/index.js";

/** Members whose transports only say which address they are (no network). */
function members(opened: string[], closed: string[]) {
  return (address: string): Member => {
    opened.push(address);
    const transport = {
      unary: async () => address,
      stream: async () => address,
    } as unknown as Transport;
    return {
      address,
      transport,
      close: async () => {
        closed.push(address);
      },
    };
  };
}

async function call(balancer: RoundRobinTransport): Promise<string> {
  const unary = balancer.unary as unknown as (...args: unknown[]) => Promise<string>;
  return unary(undefined, undefined, undefined, undefined, {});
}

describe("RoundRobinTransport", () => {
  it("takes the addresses in turn and resolves once per interval", async () => {
    const opened: string[] = [];
    let resolutions = 0;
    const balancer = new RoundRobinTransport("svc", members(opened, []), async () => {
      resolutions++;
      return ["10.0.0.1", "10.0.0.2", "10.0.0.1"];
    });
    const seen = [await call(balancer), await call(balancer), await call(balancer)];
    assert.deepEqual(seen, ["10.0.0.1", "10.0.0.2", "10.0.0.1"]);
    assert.equal(resolutions, 1);
    assert.deepEqual(opened, ["10.0.0.1", "10.0.0.2"]);
  });

  it("keeps connections that stay, opens new ones and closes gone ones", async () => {
    const opened: string[] = [];
    const closed: string[] = [];
    let answer = ["10.0.0.1", "10.0.0.2"];
    const balancer = new RoundRobinTransport("svc", members(opened, closed), async () => answer, 0);
    await call(balancer);
    answer = ["10.0.0.2", "10.0.0.3"];
    await call(balancer);
    assert.deepEqual(opened, ["10.0.0.1", "10.0.0.2", "10.0.0.3"]);
    assert.deepEqual(closed, ["10.0.0.1"]);
    assert.deepEqual(balancer.addresses, ["10.0.0.2", "10.0.0.3"]);
  });

  it("keeps serving the last replicas when a new resolution fails", async () => {
    let fail = false;
    const balancer = new RoundRobinTransport(
      "svc",
      members([], []),
      async () => {
        if (fail) throw new Error("SERVFAIL");
        return ["10.0.0.1"];
      },
      0,
    );
    await call(balancer);
    fail = true;
    assert.equal(await call(balancer), "10.0.0.1");
  });

  it("fails with UNAVAILABLE when the name never resolved", async () => {
    const balancer = new RoundRobinTransport("svc", members([], []), async () => []);
    await assert.rejects(call(balancer), (e) => e instanceof RecalldError && e.codeName === "UNAVAILABLE");
  });
});
