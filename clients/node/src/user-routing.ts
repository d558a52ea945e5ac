/**
 * How a call is tied to its user (docs/routing.md): the rendezvous order of the
 * replicas for a user, and the `x-recalld-user` header a proxy can route on.
 * The Python and Go clients compute the same values, checked by
 * tests/scripts/affinity_vectors.json.
 */

import { createHash } from "node:crypto";
import { type DescMethod, ScalarType } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";

/** The metadata key that carries routingKey(user id) on every call that names a user. */
export const USER_ROUTING_HEADER = "x-recalld-user";

/** The first 32 hex digits of SHA-256 of the UTF-8 user id: ASCII, and no user id in a proxy's log. */
export function routingKey(userId: string): string {
  return createHash("sha256").update(userId, "utf8").digest("hex").slice(0, 32);
}

/** The rendezvous weight of `replica` for `userId`: the first 8 bytes, big-endian, of SHA-256(replica "\n" user id). */
export function replicaWeight(replica: string, userId: string): bigint {
  return createHash("sha256").update(`${replica}\n${userId}`, "utf8").digest().readBigUInt64BE(0);
}

/**
 * The replicas in the order a user's calls try them: by weight, highest
 * first, ties by replica name ascending; duplicates once. When a replica
 * goes, every other replica keeps its place relative to the rest, so only the
 * users whose first replica it was move, each to its own next one.
 */
export function replicaOrder(replicas: Iterable<string>, userId: string): string[] {
  const weighed = [...new Set(replicas)].map((replica) => ({ replica, weight: replicaWeight(replica, userId) }));
  weighed.sort((a, b) => {
    if (a.weight !== b.weight) return a.weight > b.weight ? -1 : 1;
    return a.replica < b.replica ? -1 : a.replica > b.replica ? 1 : 0;
  });
  return weighed.map((w) => w.replica);
}

/**
 * The user a request names: its `user_id` field (field 1 of every recalld
 * request; unset is ""), or undefined for a request without one (the health
 * check). `message` may be the message or a plain init object.
 */
export function userIdOf(method: DescMethod, message: unknown): string | undefined {
  const field = method.input.field.userId;
  if (field === undefined || field.fieldKind !== "scalar" || field.scalar !== ScalarType.STRING) return undefined;
  const value = typeof message === "object" && message !== null ? (message as { userId?: unknown }).userId : undefined;
  return typeof value === "string" ? value : "";
}

/**
 * An interceptor that sends `x-recalld-user` = routingKey(user id) with every
 * unary call that names a user (a non-empty `user_id`, as in the Python and Go
 * clients).
 */
export function userRoutingInterceptor(): Interceptor {
  return (next) => async (req) => {
    const userId = req.stream ? undefined : userIdOf(req.method, req.message);
    if (userId !== undefined && userId !== "") req.header.set(USER_ROUTING_HEADER, routingKey(userId));
    return next(req);
  };
}
