/** How a client is configured: defaults, limits, and the options of the client and of each call. */

import type { CallOptions as ConnectCallOptions, Interceptor } from "@connectrpc/connect";
import type { AddressResolver } from "./balancing.js";
import type { MetadataOptions } from "./metadata.js";
import type { RetryPolicy } from "./retry.js";
import type { TlsOptions } from "./targets.js";

/** Default deadline of every call but Recall and Consolidate. */
export const DEFAULT_TIMEOUT_MS = 10_000;
/** Default deadline of Recall, which sits on an agent's reply path. */
export const DEFAULT_RECALL_TIMEOUT_MS = 5_000;
/** Default deadline of Consolidate, which works through the user's (or tenant's) whole memory set. */
export const DEFAULT_CONSOLIDATE_TIMEOUT_MS = 120_000;
/** Where a client connects when neither `address` nor `RECALLD_ADDR` is set: the server's default port. */
export const DEFAULT_ADDRESS = "127.0.0.1:50051";
/** The most memories one Write may carry (the server's limit); larger writes are sent in chunks of this size. */
export const MAX_WRITE_MEMORIES = 100;
/** The longest request id the server accepts, in characters. */
export const MAX_REQUEST_ID_CHARS = 128;

/** How a client with several replicas picks one per call (see RecalldClientOptions.routing). */
export type Routing = "user" | "round_robin";
/** The values of Routing. */
export const ROUTINGS: readonly Routing[] = ["user", "round_robin"];

/** Overrides of DEFAULT_RETRY_POLICY (undefined keeps the default). */
export type RetryOptions = { [K in keyof RetryPolicy]?: RetryPolicy[K] | undefined };

/**
 * How to reach and talk to a recalld server. Every field is optional and may
 * be undefined, which means "not given".
 */
export interface RecalldClientOptions extends MetadataOptions {
  /**
   * `host:port` (for example `127.0.0.1:50051` or `[::1]:50051`) or a URL
   * whose scheme (`http`/`https`) decides TLS, for one server; or several
   * replicas: a list `host1:50051,host2:50051` (also `ipv4:a:p,b:p`,
   * `ipv6:[a]:p,[b]:p`), or `dns:///host:port` for every address the name
   * resolves to (a headless Service's pods), re-resolved every 30 s. Over
   * several replicas calls are routed by `routing`. Default: the
   * `RECALLD_ADDR` environment variable, else `127.0.0.1:50051`.
   */
  address?: string | undefined;
  /**
   * How calls are spread over several replicas: `"user"` (the
   * default) sends each user's calls to one replica, the first healthy one in
   * the user's rendezvous order (docs/routing.md); `"round_robin"` sends
   * calls to the replicas in turn. A single address is not affected.
   */
  routing?: Routing | undefined;
  /**
   * For `dns:///` addresses: how the name is resolved (default: the system
   * resolver, IPv4 and IPv6). Service discovery other than DNS plugs in here.
   */
  resolveAddresses?: AddressResolver | undefined;
  /**
   * TLS: `true` (system CAs), TlsOptions, or `false` for plaintext. Default:
   * plaintext for loopback hosts, TLS for every other host.
   */
  tls?: boolean | TlsOptions | undefined;
  /** Deadline of each call but Recall and Consolidate, retries included. Default 10 s. */
  timeoutMs?: number | undefined;
  /** Deadline of Recall, retries included. Default 5 s. */
  recallTimeoutMs?: number | undefined;
  /** Deadline of Consolidate. Default 120 s. */
  consolidateTimeoutMs?: number | undefined;
  /** Overrides of DEFAULT_RETRY_POLICY; `{ maxAttempts: 1 }` disables retries. */
  retry?: RetryOptions | undefined;
  /** Extra Connect interceptors, run after the built-in ones (innermost last). */
  interceptors?: Interceptor[] | undefined;
}

/** Per-call options. */
export interface CallOptions {
  /** Deadline for this call, retries included; overrides the client default. */
  timeoutMs?: number | undefined;
  /** Cancels the call (and any pending retry). */
  signal?: AbortSignal | undefined;
  /** Extra request metadata. */
  headers?: ConnectCallOptions["headers"] | undefined;
}

/** Options of health(). */
export interface HealthOptions extends CallOptions {
  /** The service to ask about; "" (the default) is the whole server. */
  service?: string | undefined;
}
