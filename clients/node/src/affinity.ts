/**
 * User affinity (docs/routing.md): each call goes to the first healthy replica
 * in its user's rendezvous order, so every replica keeps the working sets of
 * its own users rather than of all of them.
 */

import { Code, type ContextValues, createContextKey, type Transport } from "@connectrpc/connect";
import {
  type AddressResolver,
  DEFAULT_RESOLVE_INTERVAL_MS,
  type Member,
  ReplicaSet,
  systemResolver,
} from "./balancing.js";
import { RecalldError } from "./errors.js";
import { replicaOrder, userIdOf } from "./user-routing.js";

/** Whether an attempt failed without reaching the replica (UNAVAILABLE and no ErrorInfo). */
function unreachable(e: unknown): boolean {
  const error = RecalldError.from(e);
  return error.code === Code.Unavailable && error.reason === "";
}

/** How long a replica is skipped after its first UNAVAILABLE. */
export const INITIAL_DOWN_MS = 1_000;
/** The longest a replica is skipped: the back-off doubles up to this while it keeps failing. */
export const MAX_DOWN_MS = 30_000;
/** Response header (initial metadata) of every answer from a replica that is stopping (SIGTERM). */
export const DRAINING_HEADER = "x-recalld-draining";
/** How long a replica that said it is draining gets no new calls (it exits meanwhile). */
export const DRAINING_HOLD_MS = 30_000;

/** Whether a response's headers (or a failed call's metadata) say its replica is draining. */
function saysDraining(header: Headers): boolean {
  return header.has(DRAINING_HEADER);
}

/**
 * Which replicas are down, and until when. A replica whose call fails with
 * UNAVAILABLE is down for INITIAL_DOWN_MS; when it fails again after that
 * (the first call let through), for twice as long, up to MAX_DOWN_MS; a
 * success marks it up. Failures of calls sent while it was still up, which
 * arrive during its back-off, do not lengthen it.
 *
 * A replica that answers that it is draining is held out for DRAINING_HOLD_MS:
 * not a failure (it answered), so neither a success of a call that was already
 * in flight nor a failure during the hold ends or lengthens it. After the hold
 * it is tried again (a restarted replica at the same address).
 */
export class ReplicaHealth {
  private readonly down = new Map<string, { until: number; backoffMs: number; draining: boolean }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Whether `address` may take calls: never failed, marked up, or its back-off is over. */
  isUp(address: string): boolean {
    const state = this.down.get(address);
    return state === undefined || this.now() >= state.until;
  }

  markDown(address: string): void {
    const now = this.now();
    const state = this.down.get(address);
    if (state !== undefined && now < state.until) return;
    const backoffMs =
      state === undefined || state.draining ? INITIAL_DOWN_MS : Math.min(state.backoffMs * 2, MAX_DOWN_MS);
    this.down.set(address, { until: now + backoffMs, backoffMs, draining: false });
  }

  /** The replica answered; a draining one stays held out until its hold is over. */
  markUp(address: string): void {
    const state = this.down.get(address);
    if (state?.draining && this.now() < state.until) return; // a call sent before the notice
    this.down.delete(address);
  }

  /** The replica answered that it is stopping: no new calls for DRAINING_HOLD_MS (its calls in flight finish). */
  markDraining(address: string): void {
    const until = Math.max(this.down.get(address)?.until ?? 0, this.now() + DRAINING_HOLD_MS);
    this.down.set(address, { until, backoffMs: 0, draining: true });
  }

  /** Forgets replicas no longer in `addresses` (a new resolution dropped them). */
  keepOnly(addresses: readonly string[]): void {
    for (const address of this.down.keys()) if (!addresses.includes(address)) this.down.delete(address);
  }
}

/**
 * The replicas one call has tried, in order. RecalldClient makes every attempt
 * of a call (its retries) with the same context values, so a retry goes on to
 * the next replica of the user's order even when all of them are down.
 */
const triedReplicasKey = createContextKey<readonly string[]>([], {
  description: "replicas the attempts of this call went to",
});

/**
 * A transport that sends each call to the first healthy replica in the
 * rendezvous order of the user it names (`userId` of the request), over the
 * replicas `resolve(host)` lists (a list of addresses, or every address a
 * name resolves to, again every `resolveIntervalMs`).
 *
 * A replica whose call fails with UNAVAILABLE is skipped for a back-off
 * (ReplicaHealth); one whose answer (a response, or an error) carries
 * DRAINING_HEADER is skipped for DRAINING_HOLD_MS, and the call's result is
 * returned or thrown as usual. A retry of the call goes to the next replica of
 * the user's order it has not tried. When every replica is down, they are
 * tried in the user's order anyway. Calls that name no user (the health check) go to the
 * healthy replicas in turn.
 */
export class UserAffinityTransport implements Transport {
  private readonly replicas: ReplicaSet;
  private readonly health: ReplicaHealth;
  private turn = 0;

  constructor(
    host: string,
    connect: (address: string) => Member,
    resolve: AddressResolver = systemResolver,
    resolveIntervalMs: number = DEFAULT_RESOLVE_INTERVAL_MS,
    now: () => number = Date.now,
  ) {
    this.replicas = new ReplicaSet(host, connect, resolve, resolveIntervalMs);
    this.health = new ReplicaHealth(now);
  }

  /** The replicas' addresses as last resolved. */
  get addresses(): string[] {
    return this.replicas.addresses;
  }

  readonly unary: Transport["unary"] = async (method, signal, timeoutMs, header, input, contextValues) => {
    const member = await this.pick(userIdOf(method, input), contextValues);
    return this.observe(member, signal, () =>
      member.transport.unary(method, signal, timeoutMs, header, input, contextValues),
    );
  };

  // No recalld RPC streams; a stream's user is in messages not yet read, so streams go in turn.
  readonly stream: Transport["stream"] = async (method, signal, timeoutMs, header, input, contextValues) => {
    const member = await this.pick(undefined, contextValues);
    return this.observe(member, signal, () =>
      member.transport.stream(method, signal, timeoutMs, header, input, contextValues),
    );
  };

  /** Closes every replica's connection (once its calls are done); later calls resolve and connect again. */
  close(): Promise<void> {
    return this.replicas.close();
  }

  /** The replica for the next attempt of a call for `userId` (undefined: no user, in turn). */
  private async pick(userId: string | undefined, contextValues: ContextValues | undefined): Promise<Member> {
    const members = await this.replicas.current();
    this.health.keepOnly(members.map((m) => m.address));
    let order: Member[];
    if (userId === undefined) {
      const start = this.turn++ % members.length;
      order = [...members.slice(start), ...members.slice(0, start)];
    } else {
      const byAddress = new Map(members.map((m) => [m.address, m]));
      order = replicaOrder(byAddress.keys(), userId).map((address) => byAddress.get(address)!);
    }
    const tried = contextValues?.get(triedReplicasKey) ?? [];
    const untried = order.filter((m) => !tried.includes(m.address));
    const candidates = untried.length > 0 ? untried : order; // every replica tried: round again
    const member = candidates.find((m) => this.health.isUp(m.address)) ?? candidates[0]!;
    contextValues?.set(triedReplicasKey, untried.length > 0 ? [...tried, member.address] : [member.address]);
    return member;
  }

  /**
   * Runs one attempt on `member`: an answer that says the replica is draining
   * holds it out, UNAVAILABLE marks it down, a response marks it up.
   */
  private async observe<T extends { header: Headers }>(
    member: Member,
    signal: AbortSignal | undefined,
    attempt: () => Promise<T>,
  ): Promise<T> {
    try {
      const response = await attempt();
      if (saysDraining(response.header)) this.health.markDraining(member.address);
      else this.health.markUp(member.address);
      return response;
    } catch (e) {
      const error = RecalldError.from(e);
      // The metadata of a failed call holds the response headers the replica sent.
      if (saysDraining(error.metadata)) this.health.markDraining(member.address);
      // Without an ErrorInfo reason the replica was not reached; with one
      // (BACKEND_UNAVAILABLE) it answered, and its users stay.
      else if (!signal?.aborted && unreachable(error)) this.health.markDown(member.address);
      throw e;
    }
  }
}
