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
 * A transport that sends each call to the next replica in turn (round robin),
 * over every address a name resolves to, as gRPC's `round_robin` policy does
 * for `dns:///` targets in the Python and Go clients. A headless Kubernetes
 * Service resolves to every ready pod, so calls spread over all of them rather
 * than sticking to the first connection.
 *
 * The name is resolved again every `resolveIntervalMs`: connections to
 * addresses that stay are kept, new ones are opened, gone ones closed. When a
 * new resolution fails, the last known replicas keep serving.
 */
export class RoundRobinTransport implements Transport {
  private members: Member[] = [];
  private turn = 0;
  private resolvedAt = Number.NEGATIVE_INFINITY;
  private resolving: Promise<void> | undefined;

  constructor(
    private readonly host: string,
    private readonly connect: (address: string) => Member,
    private readonly resolve: AddressResolver = systemResolver,
    private readonly resolveIntervalMs: number = DEFAULT_RESOLVE_INTERVAL_MS,
  ) {}

  /** The replicas' addresses as last resolved. */
  get addresses(): string[] {
    return this.members.map((m) => m.address);
  }

  readonly unary: Transport["unary"] = async (method, signal, timeoutMs, header, input, contextValues) =>
    (await this.next()).unary(method, signal, timeoutMs, header, input, contextValues);

  readonly stream: Transport["stream"] = async (method, signal, timeoutMs, header, input, contextValues) =>
    (await this.next()).stream(method, signal, timeoutMs, header, input, contextValues);

  /** Closes every replica's connection (once its calls are done); later calls resolve and connect again. */
  async close(): Promise<void> {
    const members = this.members;
    this.members = [];
    this.resolvedAt = Number.NEGATIVE_INFINITY;
    await Promise.all(members.map((m) => m.close()));
  }

  private async next(): Promise<Transport> {
    if (this.members.length === 0 || Date.now() - this.resolvedAt >= this.resolveIntervalMs) {
      this.resolving ??= this.refresh().finally(() => {
        this.resolving = undefined;
      });
      await this.resolving;
    }
    const member = this.members[this.turn++ % this.members.length]!;
    return member.transport;
  }

  private async refresh(): Promise<void> {
    let found: string[];
    try {
      found = [...new Set(await this.resolve(this.host))];
    } catch (e) {
      found = [];
      if (this.members.length === 0) {
        throw new RecalldError({
          code: Code.Unavailable,
          message: `cannot resolve ${this.host}: ${e instanceof Error ? e.message : String(e)}`,
        });
      }
    }
    this.resolvedAt = Date.now();
    if (found.length === 0) {
      if (this.members.length > 0) return; // keep serving from the last known replicas
      throw new RecalldError({ code: Code.Unavailable, message: `${this.host} resolves to no address` });
    }
    const known = new Map(this.members.map((m) => [m.address, m]));
    const members = found.map((address) => known.get(address) ?? this.connect(address));
    // Calls still running on a gone replica finish there; its connection closes after them.
    for (const member of this.members) if (!members.includes(member)) void member.close();
    this.members = members;
  }
}
