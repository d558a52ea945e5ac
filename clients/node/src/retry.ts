import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { MemoryService } from "./gen/recalld/v1/memory_service_pb.js";
import { SessionService } from "./gen/recalld/v1/session_service_pb.js";

/** Bounded exponential backoff for UNAVAILABLE on idempotent calls. */
export interface RetryPolicy {
  /** Attempts in total, the first included; 1 disables retries. */
  maxAttempts: number;
  /** Delay before the first retry. */
  initialBackoffMs: number;
  /** Upper bound of any single delay. */
  maxBackoffMs: number;
  /** Growth factor between consecutive delays. */
  multiplier: number;
  /** Each delay is drawn uniformly from [d * (1 - jitter), d]. 0..1. */
  jitter: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 4,
  initialBackoffMs: 100,
  maxBackoffMs: 2000,
  multiplier: 2,
  jitter: 0.2,
});

/** The RPCs of recalld.v1.MemoryService and recalld.v1.SessionService, as named in the contract. */
export type MethodName =
  | "Write"
  | "Recall"
  | "GetProfile"
  | "Get"
  | "List"
  | "Update"
  | "Forget"
  | "Restore"
  | "Confirm"
  | "History"
  | "ListConflicts"
  | "ResolveConflict"
  | "Consolidate"
  | SessionMethodName;

/** The RPCs of recalld.v1.SessionService, as named in the contract. */
export type SessionMethodName = "AppendMessages" | "GetContext" | "GetSession" | "ListSessions" | "EndSession";

/**
 * The RPCs the contract marks NO_SIDE_EFFECTS or IDEMPOTENT (the proto's
 * `idempotency_level`): Recall, GetProfile, Get, List, History and
 * ListConflicts of MemoryService; GetContext, GetSession and ListSessions of
 * SessionService. Method names are unique across the two services.
 */
export const RETRY_SAFE_RPCS: ReadonlySet<string> = new Set(
  [...MemoryService.methods, ...SessionService.methods]
    .filter(
      (m) =>
        m.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS ||
        m.idempotency === MethodOptions_IdempotencyLevel.IDEMPOTENT,
    )
    .map((m) => m.name),
);

/**
 * Whether a call of `method` with `request` may be sent again.
 *
 * The RPCs the contract marks safe (RETRY_SAFE_RPCS), and Write and
 * AppendMessages with a `request_id` (the server replays the first result).
 * The other RPCs change state and are never retried: an Update whose response
 * was lost would fail the etag check on replay, a Forget, Restore, Confirm,
 * ResolveConflict or EndSession may have happened, and a Consolidate run is
 * left to its schedule.
 */
export function isIdempotent(method: MethodName, request: { requestId?: string | undefined }): boolean {
  if (method === "Write" || method === "AppendMessages") return (request.requestId ?? "") !== "";
  return RETRY_SAFE_RPCS.has(method);
}

/** Whether to retry after a failed attempt (`attempt` counts from 1). */
export function shouldRetry(
  method: MethodName,
  request: { requestId?: string | undefined },
  code: Code,
  attempt: number,
  policy: RetryPolicy,
): boolean {
  return code === Code.Unavailable && attempt < policy.maxAttempts && isIdempotent(method, request);
}

/**
 * Delay before retry number `retry` (1 for the first retry), capped at
 * `maxBackoffMs`. `random` returns a number in [0, 1).
 */
export function backoffMs(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const base = Math.min(policy.maxBackoffMs, policy.initialBackoffMs * policy.multiplier ** Math.max(0, retry - 1));
  const jitter = Math.min(1, Math.max(0, policy.jitter));
  return Math.round(base * (1 - jitter * random()));
}
