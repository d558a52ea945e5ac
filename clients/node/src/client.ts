import { setTimeout as sleep } from "node:timers/promises";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { TimestampSchema } from "@bufbuild/protobuf/wkt";
import {
  type Client,
  Code,
  type CallOptions as ConnectCallOptions,
  createClient,
  createContextValues,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { context as otelContext, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { type AddressResolver, type Member, RoundRobinTransport } from "./balancing.js";
import { codeName, RecalldError } from "./errors.js";
import type { Memory } from "./gen/recalld/v1/memory_pb.js";
import {
  type ConfirmRequestSchema,
  type ConfirmResponse,
  type ConsolidateRequestSchema,
  type ConsolidateResponse,
  type ForgetRequestSchema,
  type ForgetResponse,
  type GetProfileRequestSchema,
  type GetProfileResponse,
  type GetRequestSchema,
  type GetResponse,
  type HistoryRequestSchema,
  type HistoryResponse,
  type ListConflictsRequestSchema,
  type ListConflictsResponse,
  type ListRequestSchema,
  type ListResponse,
  MemoryService,
  type RecallRequestSchema,
  type RecallResponse,
  type ResolveConflictRequestSchema,
  type ResolveConflictResponse,
  type RestoreRequestSchema,
  type RestoreResponse,
  type UpdateRequestSchema,
  type UpdateResponse,
  type WriteRequestSchema,
  type WriteResponse,
} from "./gen/recalld/v1/memory_service_pb.js";
import {
  type AppendMessagesResponse,
  type EndSessionRequestSchema,
  type EndSessionResponse,
  type GetContextRequestSchema,
  type GetContextResponse,
  type GetSessionRequestSchema,
  type GetSessionResponse,
  type ListSessionsRequestSchema,
  type ListSessionsResponse,
  type Message,
  MessageRole,
  type MessageSchema,
  type Session,
  SessionService,
} from "./gen/recalld/v1/session_service_pb.js";
import { type MetadataOptions, metadataInterceptor, otelContextKey, traceContextInterceptor } from "./metadata.js";
import { backoffMs, DEFAULT_RETRY_POLICY, type MethodName, type RetryPolicy, shouldRetry } from "./retry.js";
import { VERSION } from "./version.js";

/** Default deadline of every call but Recall. */
export const DEFAULT_TIMEOUT_MS = 10_000;
/** Default deadline of Recall, which sits on an agent's reply path. */
export const DEFAULT_RECALL_TIMEOUT_MS = 5_000;

/** Transport security for a TLS connection (PEM strings or buffers). */
export interface TlsOptions {
  /** Trusted CA certificates; Node's default store when unset. */
  ca?: string | Buffer;
  /** Client certificate for mutual TLS. */
  cert?: string | Buffer;
  /** Client private key for mutual TLS. */
  key?: string | Buffer;
  /** Server name to verify, when it differs from the address's host. */
  serverName?: string;
}

/** How to reach and talk to a recalld server. */
export interface RecalldClientOptions extends MetadataOptions {
  /**
   * `host:port` (for example `127.0.0.1:50051` or `[::1]:50051`), a URL whose
   * scheme (`http`/`https`) decides TLS, or `dns:///host:port` to spread calls
   * round robin over every address the name resolves to (a headless Service's
   * pods), re-resolved every 30 s.
   */
  address: string;
  /**
   * For `dns:///` addresses: how the name is resolved (default: the system
   * resolver, IPv4 and IPv6). Service discovery other than DNS plugs in here.
   */
  resolveAddresses?: AddressResolver;
  /**
   * TLS: `true` (system CAs), TlsOptions, or `false` for plaintext. Default:
   * plaintext for loopback hosts, TLS for every other host.
   */
  tls?: boolean | TlsOptions;
  /** Deadline of each call but Recall, retries included. Default 10 s. */
  timeoutMs?: number;
  /** Deadline of Recall, retries included. Default 5 s. */
  recallTimeoutMs?: number;
  /** Overrides of DEFAULT_RETRY_POLICY; `{ maxAttempts: 1 }` disables retries. */
  retry?: Partial<RetryPolicy>;
  /** Extra Connect interceptors, run after the built-in ones (innermost last). */
  interceptors?: Interceptor[];
}

/** Per-call options. */
export interface CallOptions {
  /** Deadline for this call, retries included; overrides the client default. */
  timeoutMs?: number;
  /** Cancels the call (and any pending retry). */
  signal?: AbortSignal;
  /** Extra request metadata. */
  headers?: ConnectCallOptions["headers"];
}

/** Where a client connects: the base URL and whether TLS is used. */
export interface Target {
  baseUrl: string;
  secure: boolean;
  /** Set for `dns:///` addresses: calls go round robin over this name's addresses. */
  balancedHost?: string;
}

/** Whether `host` (without port; IPv6 with or without brackets) is a loopback host. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost" || h === "::1" || /^127(\.\d{1,3}){3}$/.test(h)) return true;
  // IPv4-mapped IPv6: ::ffff:127.0.0.1, or the same in hex (::ffff:7f00:1).
  const mapped = /^(?:0{0,4}:){0,5}:?ffff:(.+)$/.exec(h)?.[1];
  return mapped !== undefined && (/^127(\.\d{1,3}){3}$/.test(mapped) || /^7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(mapped));
}

/** Resolves `address` and the `tls` option into a base URL. */
export function resolveTarget(address: string, tls?: boolean | TlsOptions): Target {
  const balanced = /^dns:\/\/\/(.*)$/i.exec(address);
  if (balanced) {
    const target = resolveTarget(balanced[1]!, tls);
    if (/^[a-z]+:\/\//i.test(balanced[1]!)) {
      throw new TypeError(`recalld: dns:/// takes host:port, got ${JSON.stringify(address)}`);
    }
    return { ...target, balancedHost: new URL(target.baseUrl).hostname.replace(/^\[|\]$/g, "") };
  }
  const schemeMatch = /^(https?):\/\//i.exec(address);
  if (schemeMatch) {
    const secure = schemeMatch[1]!.toLowerCase() === "https";
    if (tls !== undefined && Boolean(tls) !== secure) {
      throw new TypeError(`recalld: address ${address} contradicts the tls option`);
    }
    return { baseUrl: address.replace(/\/+$/, ""), secure };
  }
  const url = new URL(`http://${address}`);
  if (url.port === "" || url.pathname !== "/" || url.username !== "") {
    throw new TypeError(`recalld: address must be host:port or a URL, got ${JSON.stringify(address)}`);
  }
  const secure = tls === undefined ? !isLoopbackHost(url.hostname) : Boolean(tls);
  return { baseUrl: `${secure ? "https" : "http"}://${url.host}`, secure };
}

const tracer = trace.getTracer("@recalld/client", VERSION);

const SESSION_METHODS: ReadonlySet<string> = new Set(SessionService.methods.map((m) => m.name));

/** A message role by its name, as a convenience over the MessageRole enum. */
export type MessageRoleName = "user" | "assistant" | "system" | "tool";

const ROLES: Readonly<Record<MessageRoleName, MessageRole>> = {
  user: MessageRole.USER,
  assistant: MessageRole.ASSISTANT,
  system: MessageRole.SYSTEM,
  tool: MessageRole.TOOL,
};

/**
 * A message to append: a generated Message, or a plain `{ role, content }`
 * whose role is a MessageRole or its name ("user", "assistant", ...).
 */
export type MessageInput =
  | Message
  | {
      role: MessageRole | MessageRoleName;
      content: string;
      /** When it was said; defaults to the time it was appended. */
      createdAt?: MessageInitShape<typeof TimestampSchema>;
    };

/** AppendMessagesRequest with messages given as MessageInput. */
export interface AppendMessagesInput {
  userId: string;
  sessionId: string;
  messages: MessageInput[];
  /** Turn the user messages into memories (through the write rules). */
  extract?: boolean;
  /** With extract: return before extraction finishes. */
  extractAsync?: boolean;
  /** Idempotency key: a retry with it appends nothing twice. */
  requestId?: string;
  agentScope?: string;
}

/** The Message init for a MessageInput (role names become MessageRole values). */
export function toMessage(message: MessageInput): MessageInitShape<typeof MessageSchema> {
  if ("$typeName" in message) return message;
  const { role, content, createdAt } = message;
  const value = typeof role === "number" ? role : ROLES[role];
  if (value === undefined) throw new TypeError(`recalld: unknown message role ${JSON.stringify(role)}`);
  return createdAt === undefined ? { role: value, content } : { role: value, content, createdAt };
}

/**
 * A client of recalld.v1.MemoryService and recalld.v1.SessionService over
 * gRPC (HTTP/2), both on one connection.
 *
 * Every method takes the generated request type (a plain object is enough),
 * resolves with the generated response type, and rejects with RecalldError.
 * UNAVAILABLE is retried with bounded exponential backoff where that is safe:
 * the reads (Recall, GetProfile, Get, List, History, ListConflicts,
 * GetContext, GetSession, ListSessions) always, Write and AppendMessages only
 * with a `requestId`, the other writes never. Each call's deadline covers its
 * retries.
 */
export class RecalldClient {
  /** The generated Connect client, for anything the wrapper does not cover. */
  readonly raw: Client<typeof MemoryService>;
  /** The generated SessionService client, on the same transport. */
  readonly rawSessions: Client<typeof SessionService>;
  readonly target: Target;
  private readonly closeTransport: () => void;
  private readonly timeoutMs: number;
  private readonly recallTimeoutMs: number;
  private readonly retry: RetryPolicy;

  constructor(options: RecalldClientOptions) {
    this.target = resolveTarget(options.address, options.tls);
    this.timeoutMs = positive(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, "timeoutMs");
    this.recallTimeoutMs = positive(options.recallTimeoutMs ?? DEFAULT_RECALL_TIMEOUT_MS, "recallTimeoutMs");
    this.retry = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    if (!(this.retry.maxAttempts >= 1)) throw new TypeError("recalld: retry.maxAttempts must be at least 1");
    const tls = typeof options.tls === "object" ? options.tls : {};
    const interceptors = [metadataInterceptor(options), traceContextInterceptor(), ...(options.interceptors ?? [])];
    const connectTo = (baseUrl: string, servername: string | undefined): Member => {
      const sessionManager = new Http2SessionManager(
        baseUrl,
        { pingIntervalMs: 30_000, idleConnectionTimeoutMs: 5 * 60_000 },
        this.target.secure ? { ca: tls.ca, cert: tls.cert, key: tls.key, servername } : {},
      );
      return {
        address: baseUrl,
        transport: createGrpcTransport({ baseUrl, sessionManager, interceptors }),
        close: () => sessionManager.abort(),
      };
    };
    let transport: Transport;
    const { balancedHost } = this.target;
    if (balancedHost !== undefined) {
      const port = new URL(this.target.baseUrl).port;
      const scheme = this.target.secure ? "https" : "http";
      // Certificates name the host, not each pod's address.
      const servername = tls.serverName ?? balancedHost;
      const balancer = new RoundRobinTransport(
        balancedHost,
        (address) => {
          const host = address.includes(":") ? `[${address}]` : address;
          return { ...connectTo(`${scheme}://${host}:${port}`, servername), address };
        },
        options.resolveAddresses,
      );
      this.closeTransport = () => balancer.close();
      transport = balancer;
    } else {
      const member = connectTo(this.target.baseUrl, tls.serverName);
      this.closeTransport = member.close;
      transport = member.transport;
    }
    this.raw = createClient(MemoryService, transport);
    this.rawSessions = createClient(SessionService, transport);
  }

  /** Stores one memory or a batch. Retried on UNAVAILABLE only if `requestId` is set. */
  write(request: MessageInitShape<typeof WriteRequestSchema>, options?: CallOptions): Promise<WriteResponse> {
    return this.invoke("Write", request, options, (r, o) => this.raw.write(r, o));
  }

  /**
   * Returns the user's memories most relevant to a query (default deadline
   * 5 s), with the user's profile (unless `skipProfile`), a `context` block
   * ready for a prompt and, with `explain`, every candidate considered.
   */
  recall(request: MessageInitShape<typeof RecallRequestSchema>, options?: CallOptions): Promise<RecallResponse> {
    return this.invoke("Recall", request, options, (r, o) => this.raw.recall(r, o));
  }

  /**
   * Returns the user's profile: the active core (P0) memories and the active
   * facts and preferences that carry a `topicKey`, one per topic (core first,
   * then by topic key). `profile.fromCache` tells whether it came from the
   * server's cache. Retried on UNAVAILABLE.
   */
  getProfile(
    request: MessageInitShape<typeof GetProfileRequestSchema>,
    options?: CallOptions,
  ): Promise<GetProfileResponse> {
    return this.invoke("GetProfile", request, options, (r, o) => this.raw.getProfile(r, o));
  }

  /** Returns one memory by id. */
  get(request: MessageInitShape<typeof GetRequestSchema>, options?: CallOptions): Promise<GetResponse> {
    return this.invoke("Get", request, options, (r, o) => this.raw.get(r, o));
  }

  /** Returns one page of the user's memories, newest first. */
  list(request: MessageInitShape<typeof ListRequestSchema>, options?: CallOptions): Promise<ListResponse> {
    return this.invoke("List", request, options, (r, o) => this.raw.list(r, o));
  }

  /** Iterates over every memory of a listing, fetching pages as needed. */
  async *listAll(
    request: MessageInitShape<typeof ListRequestSchema>,
    options?: CallOptions,
  ): AsyncGenerator<Memory, void, undefined> {
    let pageToken = request.pageToken ?? "";
    do {
      const page = await this.list({ ...request, pageToken }, options);
      yield* page.memories;
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
  }

  /** Changes the fields in `updateMask`; a stale `memory.etag` rejects with ABORTED. Never retried. */
  update(request: MessageInitShape<typeof UpdateRequestSchema>, options?: CallOptions): Promise<UpdateResponse> {
    return this.invoke("Update", request, options, (r, o) => this.raw.update(r, o));
  }

  /**
   * Archives (SOFT, default) or deletes (HARD) memories: by id, or one other
   * target (`topicKey`, `selector`, `sessionId`, `allOfUser`, `wholeTenant`).
   * `sessionId` also deletes the session with its messages and summary.
   * Never retried.
   */
  forget(request: MessageInitShape<typeof ForgetRequestSchema>, options?: CallOptions): Promise<ForgetResponse> {
    return this.invoke("Forget", request, options, (r, o) => this.raw.forget(r, o));
  }

  /** Brings soft-forgotten (archived) memories back. Never retried. */
  restore(request: MessageInitShape<typeof RestoreRequestSchema>, options?: CallOptions): Promise<RestoreResponse> {
    return this.invoke("Restore", request, options, (r, o) => this.raw.restore(r, o));
  }

  /** Promotes draft (low-confidence) memories to active. Never retried. */
  confirm(request: MessageInitShape<typeof ConfirmRequestSchema>, options?: CallOptions): Promise<ConfirmResponse> {
    return this.invoke("Confirm", request, options, (r, o) => this.raw.confirm(r, o));
  }

  /** Returns every version of a memory, oldest first. */
  history(request: MessageInitShape<typeof HistoryRequestSchema>, options?: CallOptions): Promise<HistoryResponse> {
    return this.invoke("History", request, options, (r, o) => this.raw.history(r, o));
  }

  /** Lists writes parked because they contradict a core (P0) memory. */
  listConflicts(
    request: MessageInitShape<typeof ListConflictsRequestSchema>,
    options?: CallOptions,
  ): Promise<ListConflictsResponse> {
    return this.invoke("ListConflicts", request, options, (r, o) => this.raw.listConflicts(r, o));
  }

  /** Applies a person's decision on a parked conflict. Never retried. */
  resolveConflict(
    request: MessageInitShape<typeof ResolveConflictRequestSchema>,
    options?: CallOptions,
  ): Promise<ResolveConflictResponse> {
    return this.invoke("ResolveConflict", request, options, (r, o) => this.raw.resolveConflict(r, o));
  }

  /** Runs (or, with dryRun, previews) consolidation. Never retried. */
  consolidate(
    request: MessageInitShape<typeof ConsolidateRequestSchema>,
    options?: CallOptions,
  ): Promise<ConsolidateResponse> {
    return this.invoke("Consolidate", request, options, (r, o) => this.raw.consolidate(r, o));
  }

  /**
   * Appends messages to a session, creating it on first use. With `extract`,
   * user messages also become memories through the write rules (`extracted`
   * says what each became; with `extractAsync`, later `session.extraction`).
   * Roles may be given by name ("user", "assistant", "system", "tool").
   * Retried on UNAVAILABLE only if `requestId` is set.
   */
  appendMessages(request: AppendMessagesInput, options?: CallOptions): Promise<AppendMessagesResponse> {
    const init = { ...request, messages: request.messages.map(toMessage) };
    return this.invoke("AppendMessages", init, options, (r, o) => this.rawSessions.appendMessages(r, o));
  }

  /**
   * Everything the next model turn needs, within `tokenBudget` (0: the
   * server's 4000): the newest messages that fit (oldest first), the running
   * summary, the memories recalled for `query` (default: the last user
   * message) and the profile, with one rendered `context` block. Retried on
   * UNAVAILABLE.
   */
  getContext(
    request: MessageInitShape<typeof GetContextRequestSchema>,
    options?: CallOptions,
  ): Promise<GetContextResponse> {
    return this.invoke("GetContext", request, options, (r, o) => this.rawSessions.getContext(r, o));
  }

  /** Returns a session's counters, summary and extraction status (NOT_FOUND if none). */
  getSession(
    request: MessageInitShape<typeof GetSessionRequestSchema>,
    options?: CallOptions,
  ): Promise<GetSessionResponse> {
    return this.invoke("GetSession", request, options, (r, o) => this.rawSessions.getSession(r, o));
  }

  /** Returns one page of the user's sessions, newest first. */
  listSessions(
    request: MessageInitShape<typeof ListSessionsRequestSchema>,
    options?: CallOptions,
  ): Promise<ListSessionsResponse> {
    return this.invoke("ListSessions", request, options, (r, o) => this.rawSessions.listSessions(r, o));
  }

  /** Iterates over every session of the user, newest first, fetching pages as needed. */
  async *listAllSessions(
    request: MessageInitShape<typeof ListSessionsRequestSchema>,
    options?: CallOptions,
  ): AsyncGenerator<Session, void, undefined> {
    let pageToken = request.pageToken ?? "";
    do {
      const page = await this.listSessions({ ...request, pageToken }, options);
      yield* page.sessions;
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
  }

  /**
   * Folds the remaining messages into the summary, stores it as a SUMMARY
   * memory linked to the session and closes the session. Never retried.
   */
  endSession(
    request: MessageInitShape<typeof EndSessionRequestSchema>,
    options?: CallOptions,
  ): Promise<EndSessionResponse> {
    return this.invoke("EndSession", request, options, (r, o) => this.rawSessions.endSession(r, o));
  }

  /** Closes the HTTP/2 connections; calls made afterwards reconnect. */
  close(): void {
    this.closeTransport();
  }

  private async invoke<Req, Res>(
    method: MethodName,
    request: Req,
    options: CallOptions | undefined,
    call: (request: Req, options: ConnectCallOptions) => Promise<Res>,
  ): Promise<Res> {
    const timeoutMs = positive(
      options?.timeoutMs ?? (method === "Recall" ? this.recallTimeoutMs : this.timeoutMs),
      "timeoutMs",
    );
    const deadline = Date.now() + timeoutMs;
    const parent = otelContext.active();
    const service = SESSION_METHODS.has(method) ? SessionService.typeName : MemoryService.typeName;
    const span = tracer.startSpan(
      `${service}/${method}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          "rpc.system": "grpc",
          "rpc.service": service,
          "rpc.method": method,
        },
      },
      parent,
    );
    const contextValues = createContextValues().set(otelContextKey, trace.setSpan(parent, span));
    try {
      for (let attempt = 1; ; attempt++) {
        const remaining = deadline - Date.now();
        try {
          if (remaining <= 0) {
            throw new RecalldError({ code: Code.DeadlineExceeded, message: `deadline of ${timeoutMs} ms exceeded` });
          }
          const response = await call(request, {
            timeoutMs: remaining,
            signal: options?.signal,
            headers: options?.headers,
            contextValues,
          });
          span.setAttribute("rpc.grpc.status_code", 0);
          return response;
        } catch (e) {
          const err = RecalldError.from(e);
          const delay = backoffMs(attempt, this.retry);
          if (
            !shouldRetry(method, request as { requestId?: string }, err.code, attempt, this.retry) ||
            options?.signal?.aborted ||
            Date.now() + delay >= deadline
          ) {
            throw err;
          }
          span.addEvent("retry", { attempt, "rpc.grpc.status_code": err.code, delay_ms: delay });
          await sleep(delay, undefined, { signal: options?.signal });
        }
      }
    } catch (e) {
      const err = RecalldError.from(e);
      span.setAttribute("rpc.grpc.status_code", err.code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: `${codeName(err.code)}: ${err.rawMessage}` });
      throw err;
    } finally {
      span.end();
    }
  }
}

function positive(value: number, name: string): number {
  if (!(value > 0) || !Number.isFinite(value)) throw new TypeError(`recalld: ${name} must be a positive number`);
  return value;
}
