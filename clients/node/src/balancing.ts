import { lookup } from "node:dns/promises";
import { Code, type Transport } from "@connectrpc/connect";
import { RecalldError } from "./errors.js";

/** Resolves a host name to the addresses of every replica behind it. */
export type AddressResolver = (host: string) => Promise<string[]>;

/** How often a balanced client asks the resolver again, so new replicas get calls. */
export const DEFAULT_RESOLVE_INTERVAL_MS = 30_000;

/** Every address the system resolver gives for `host` (IPv4 and IPv6), like getaddrinfo. */
export const systemResolver: AddressResolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

/** One replica: its address, the transport to it, and how to close that transport. */
export interface Member {
  address: string;
  transport: Transport;
  /** Closes the connection once its in-flight calls are done. */
  close(): Promise<void>;
}

/**
 * The replicas behind a name and one connection to each: what a balancing
 * transport picks from for every call.
 *
 * `resolve(name)` lists the replicas' addresses. It is asked again every
 * `resolveIntervalMs`: connections to addresses that stay are kept, new ones
 * are opened, gone ones closed. When a new resolution fails, the last known
 * replicas keep serving.
 */
export class ReplicaSet {
  private members: Member[] = [];
  private resolvedAt = Number.NEGATIVE_INFINITY;
  private resolving: Promise<void> | undefined;

  constructor(
    private readonly name: string,
    private readonly connect: (address: string) => Member,
    private readonly resolve: AddressResolver = systemResolver,
    private readonly resolveIntervalMs: number = DEFAULT_RESOLVE_INTERVAL_MS,
  ) {}

  /** The replicas' addresses as last resolved. */
  get addresses(): string[] {
    return this.members.map((m) => m.address);
  }

  /** The replicas, resolved again first when the last resolution is older than the interval. */
  async current(): Promise<readonly Member[]> {
    if (this.members.length === 0 || Date.now() - this.resolvedAt >= this.resolveIntervalMs) {
      this.resolving ??= this.refresh().finally(() => {
        this.resolving = undefined;
      });
      await this.resolving;
    }
    return this.members;
  }

  /** Closes every replica's connection (once its calls are done); later calls resolve and connect again. */
  async close(): Promise<void> {
    const members = this.members;
    this.members = [];
    this.resolvedAt = Number.NEGATIVE_INFINITY;
    await Promise.all(members.map((m) => m.close()));
  }

  private async refresh(): Promise<void> {
    let found: string[];
    try {
      found = [...new Set(await this.resolve(this.name))];
    } catch (e) {
      found = [];
      if (this.members.length === 0) {
        throw new RecalldError({
          code: Code.Unavailable,
          message: `cannot resolve ${this.name}: ${e instanceof Error ? e.message : String(e)}`,
        });
      }
    }
    this.resolvedAt = Date.now();
    if (found.length === 0) {
      if (this.members.length > 0) return; // keep serving from the last known replicas
      throw new RecalldError({ code: Code.Unavailable, message: `${this.name} resolves to no address` });
    }
    const known = new Map(this.members.map((m) => [m.address, m]));
    const members = found.map((address) => known.get(address) ?? this.connect(address));
    // Calls still running on a gone replica finish there; its connection closes after them.
    for (const member of this.members) if (!members.includes(member)) void member.close();
    this.members = members;
  }
}

/**
 * A transport that sends each call to the next replica in turn (round robin),
 * over every address a name resolves to, as gRPC's `round_robin` policy does
 * in the Python and Go clients. A headless Kubernetes Service resolves to
 * every ready pod, so calls spread over all of them rather than sticking to
 * the first connection. The replicas are a ReplicaSet: `resolve(host)` is
 * asked again every `resolveIntervalMs`.
 */
export class RoundRobinTransport implements Transport {
  private readonly replicas: ReplicaSet;
  private turn = 0;

  constructor(
    host: string,
    connect: (address: string) => Member,
    resolve: AddressResolver = systemResolver,
    resolveIntervalMs: number = DEFAULT_RESOLVE_INTERVAL_MS,
  ) {
    this.replicas = new ReplicaSet(host, connect, resolve, resolveIntervalMs);
  }

  /** The replicas' addresses as last resolved. */
  get addresses(): string[] {
    return this.replicas.addresses;
  }

  readonly unary: Transport["unary"] = async (method, signal, timeoutMs, header, input, contextValues) =>
    (await this.next()).unary(method, signal, timeoutMs, header, input, contextValues);

  readonly stream: Transport["stream"] = async (method, signal, timeoutMs, header, input, contextValues) =>
    (await this.next()).stream(method, signal, timeoutMs, header, input, contextValues);

  /** Closes every replica's connection (once its calls are done); later calls resolve and connect again. */
  close(): Promise<void> {
    return this.replicas.close();
  }

  private async next(): Promise<Transport> {
    const members = await this.replicas.current();
    return members[this.turn++ % members.length]!.transport;
  }
}
