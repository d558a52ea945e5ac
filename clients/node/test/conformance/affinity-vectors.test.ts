// The routing vectors shared by the three clients, tests/scripts/affinity_vectors.json
// (written by tests/scripts/make_affinity_vectors.py, rule in docs/routing.md): the
// rendezvous order of replicas for a user, and the x-recalld-user header value.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { replicaOrder, routingKey } from "../../src/index.js";
import { scriptsPath } from "./scripts.js";

interface Vectors {
  orders: { replicas: string[]; user_id: string; order: string[] }[];
  routing_keys: { user_id: string; routing_key: string }[];
}

const vectors = JSON.parse(readFileSync(scriptsPath("affinity_vectors.json"), "utf8")) as Vectors;

describe("affinity vectors", () => {
  it("are there to check", () => {
    assert.ok(vectors.orders.length > 0 && vectors.routing_keys.length > 0);
    // Some case must put the replicas in an order other than as listed, or sorting is not checked.
    assert.ok(vectors.orders.some((c) => c.order.join() !== c.replicas.join()));
  });

  it("give every user its replica order", () => {
    for (const { replicas, user_id, order } of vectors.orders) {
      assert.deepEqual(replicaOrder(replicas, user_id), order, `user ${JSON.stringify(user_id)} over ${replicas}`);
    }
  });

  it("give every user its x-recalld-user value", () => {
    for (const { user_id, routing_key } of vectors.routing_keys) {
      assert.equal(routingKey(user_id), routing_key, `user ${JSON.stringify(user_id)}`);
    }
  });
});
