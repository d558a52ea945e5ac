/**
 * RecalldClient: one method per RPC of recalld.v1.MemoryService and
 * SessionService, with the client's configuration (address, credentials,
 * default deadlines, retry policy). How one call is made is in call.ts, how a
 * large write is chunked in chunked-write.ts.
 */

import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Client, type CallOptions as ConnectCallOptions, createClient } from "@connectrpc/connect";
import { callWithRetries, type Rpc } from "./call.js";
import { writeInChunks } from "./chunked-write.js";
import { clientTransport } from "./client-transport.js";
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
  type Session,
  SessionService,
} from "./gen/recalld/v1/session_service_pb.js";
import { Health, type HealthCheckRequestSchema, type HealthStatus, healthStatusName } from "./health.js";
import { type AppendMessagesInput, toMessage } from "./messages.js";
import { metadataInterceptor, traceContextInterceptor } from "./metadata.js";
import {
  type CallOptions,
  DEFAULT_ADDRESS,
  DEFAULT_CONSOLIDATE_TIMEOUT_MS,
  DEFAULT_RECALL_TIMEOUT_MS,
  DEFAULT_TIMEOUT_MS,
  type HealthOptions,
  MAX_WRITE_MEMORIES,
  type RecalldClientOptions,
  ROUTINGS,
} from "./options.js";
import { DEFAULT_RETRY_POLICY, isIdempotent, type MethodName, type RetryPolicy } from "./retry.js";
import { resolveTarget, type Target } from "./targets.js";
import { userRoutingInterceptor } from "./user-routing.js";
import { definedFields, nonEmpty, positive } from "./values.js";

const SESSION_METHODS: ReadonlySet<string> = new Set(SessionService.methods.map((m) => m.name));

/**
 * A client of recalld.v1.MemoryService and recalld.v1.SessionService over
 * gRPC (HTTP/2), both on one connection (one per replica when the address
 * names several; each user's calls then go to one of them, see `routing`).
 *
 * Every method takes the generated request type (a plain object is enough),
 * resolves with the generated response type, and rejects with RecalldError.
 * UNAVAILABLE is retried with bounded exponential backoff where that is safe:
 * the reads (Recall, GetProfile, Get, List, History, ListConflicts,
 * GetContext, GetSession, ListSessions) always, Write and AppendMessages only
 * with a `requestId`, the other writes never. Each call's deadline covers its
 * retries; over several replicas a retry goes to the user's next replica.
 */
export class RecalldClient {
  /** The generated Connect client, for anything the wrapper does not cover. */
  readonly raw: Client<typeof MemoryService>;
  /** The generated SessionService client, on the same transport. */
  readonly rawSessions: Client<typeof SessionService>;
  readonly target: Target;
  private readonly rawHealth: Client<typeof Health>;
  private readonly closeTransport: () => Promise<void>;
  private readonly timeoutMs: number;
  private readonly recallTimeoutMs: number;
  private readonly consolidateTimeoutMs: number;
  private readonly retry: RetryPolicy;
  private readonly inFlight = new Set<Promise<unknown>>();

  /**
   * Reads `RECALLD_ADDR` and `RECALLD_API_KEY` from the environment now (not
   * at import) for whatever `options` leaves undefined; explicit options win.
   */
  constructor(options: RecalldClientOptions = {}) {
    const address = nonEmpty(options.address) ?? nonEmpty(process.env.RECALLD_ADDR) ?? DEFAULT_ADDRESS;
    const envKey = options.apiKey === undefined ? nonEmpty(process.env.RECALLD_API_KEY) : undefined;
    if (envKey !== undefined && nonEmpty(options.tenant) !== undefined) {
      throw new TypeError(
        "recalld: `tenant` is only for servers without keys, and RECALLD_API_KEY is set (the key decides the " +
          'tenant); pass apiKey: "" to ignore it',
      );
    }
    const metadata = { apiKey: options.apiKey ?? envKey, tenant: options.tenant };
    this.target = resolveTarget(address, options.tls);
    this.timeoutMs = positive(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, "timeoutMs");
    this.recallTimeoutMs = positive(options.recallTimeoutMs ?? DEFAULT_RECALL_TIMEOUT_MS, "recallTimeoutMs");
    this.consolidateTimeoutMs = positive(
      options.consolidateTimeoutMs ?? DEFAULT_CONSOLIDATE_TIMEOUT_MS,
      "consolidateTimeoutMs",
    );
    const retry: RetryPolicy = { ...DEFAULT_RETRY_POLICY };
    for (const key of Object.keys(retry) as (keyof RetryPolicy)[]) {
      const value = options.retry?.[key];
      if (value !== undefined) retry[key] = value;
    }
    this.retry = retry;
    if (!(this.retry.maxAttempts >= 1)) throw new TypeError("recalld: retry.maxAttempts must be at least 1");
    const routing = options.routing ?? "user";
    if (!ROUTINGS.includes(routing)) {
      throw new TypeError(`recalld: routing must be one of ${ROUTINGS.join(", ")}, got ${JSON.stringify(routing)}`);
    }
    const interceptors = [
      metadataInterceptor(metadata),
      userRoutingInterceptor(),
      traceContextInterceptor(),
      ...(options.interceptors ?? []),
    ];
    const tls = typeof options.tls === "object" ? options.tls : {};
    const { transport, close } = clientTransport(this.target, tls, interceptors, routing, options.resolveAddresses);
    this.closeTransport = close;
    this.raw = createClient(MemoryService, transport);
    this.rawSessions = createClient(SessionService, transport);
    this.rawHealth = createClient(Health, transport);
  }

  /**
   * The server's serving status from the standard gRPC health service
   * (grpc.health.v1.Health/Check) on the same connection: "SERVING",
   * "NOT_SERVING", "UNKNOWN" or "SERVICE_UNKNOWN", all returned as values.
   * A call that fails (unreachable server, deadline, TLS mismatch) rejects
   * with RecalldError. Not retried: it reports the server as it is now.
   */
  async health(options?: HealthOptions): Promise<HealthStatus> {
    const rpc = { service: Health.typeName, method: "Check", timeoutMs: this.timeoutMs, retryable: false };
    const request: MessageInitShape<typeof HealthCheckRequestSchema> = { service: options?.service ?? "" };
    const response = await this.invoke(rpc, request, options, (r, o) => this.rawHealth.check(r, o));
    return healthStatusName(response.status);
  }

  /**
   * Stores memories. Retried on UNAVAILABLE only if `requestId` is set.
   *
   * More than 100 memories (the server's limit per call) are sent as
   * consecutive chunks of at most 100, in order, and the results come back
   * as one response in request order. Chunk i carries the request id
   * `<requestId>#i`, so retrying the whole call with the same `requestId`
   * replays the chunks already stored instead of storing them twice; a
   * request id whose chunk ids would exceed 128 characters is refused
   * (INVALID_ARGUMENT) before anything is sent. Each chunk has its own
   * deadline. If a chunk fails, the RecalldError's `written` says what the
   * earlier chunks stored, and its message and field violations number the
   * memories of the whole request (`memories[120]`, not the chunk's `[20]`).
   */
  write(request: MessageInitShape<typeof WriteRequestSchema>, options?: CallOptions): Promise<WriteResponse> {
    if ((request.memories?.length ?? 0) <= MAX_WRITE_MEMORIES) {
      return this.call("Write", request, options, (r, o) => this.raw.write(r, o));
    }
    return this.track(
      writeInChunks(request, (chunk) => this.call("Write", chunk, options, (r, o) => this.raw.write(r, o))),
    );
  }

  /**
   * Returns the user's memories most relevant to a query (default deadline
   * 5 s), with the user's profile (unless `skipProfile`), a `context` block
   * ready for a prompt and, with `explain`, every candidate considered.
   */
  recall(request: MessageInitShape<typeof RecallRequestSchema>, options?: CallOptions): Promise<RecallResponse> {
    return this.call("Recall", request, options, (r, o) => this.raw.recall(r, o));
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
    return this.call("GetProfile", request, options, (r, o) => this.raw.getProfile(r, o));
  }

  /** Returns one memory by id. */
  get(request: MessageInitShape<typeof GetRequestSchema>, options?: CallOptions): Promise<GetResponse> {
    return this.call("Get", request, options, (r, o) => this.raw.get(r, o));
  }

  /** Returns one page of the user's memories, newest first. */
  list(request: MessageInitShape<typeof ListRequestSchema>, options?: CallOptions): Promise<ListResponse> {
    return this.call("List", request, options, (r, o) => this.raw.list(r, o));
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
    return this.call("Update", request, options, (r, o) => this.raw.update(r, o));
  }

  /**
   * Archives (SOFT, default) or deletes (HARD) memories: by id, or one other
   * target (`topicKey`, `selector`, `sessionId`, `allOfUser`, `wholeTenant`).
   * `sessionId` also deletes the session with its messages and summary.
   * Never retried.
   */
  forget(request: MessageInitShape<typeof ForgetRequestSchema>, options?: CallOptions): Promise<ForgetResponse> {
    return this.call("Forget", request, options, (r, o) => this.raw.forget(r, o));
  }

  /** Brings soft-forgotten (archived) memories back. Never retried. */
  restore(request: MessageInitShape<typeof RestoreRequestSchema>, options?: CallOptions): Promise<RestoreResponse> {
    return this.call("Restore", request, options, (r, o) => this.raw.restore(r, o));
  }

  /** Promotes draft (low-confidence) memories to active. Never retried. */
  confirm(request: MessageInitShape<typeof ConfirmRequestSchema>, options?: CallOptions): Promise<ConfirmResponse> {
    return this.call("Confirm", request, options, (r, o) => this.raw.confirm(r, o));
  }

  /** Returns every version of a memory, oldest first. */
  history(request: MessageInitShape<typeof HistoryRequestSchema>, options?: CallOptions): Promise<HistoryResponse> {
    return this.call("History", request, options, (r, o) => this.raw.history(r, o));
  }

  /** Lists writes parked because they contradict a core (P0) memory. */
  listConflicts(
    request: MessageInitShape<typeof ListConflictsRequestSchema>,
    options?: CallOptions,
  ): Promise<ListConflictsResponse> {
    return this.call("ListConflicts", request, options, (r, o) => this.raw.listConflicts(r, o));
  }

  /** Applies a person's decision on a parked conflict. Never retried. */
  resolveConflict(
    request: MessageInitShape<typeof ResolveConflictRequestSchema>,
    options?: CallOptions,
  ): Promise<ResolveConflictResponse> {
    return this.call("ResolveConflict", request, options, (r, o) => this.raw.resolveConflict(r, o));
  }

  /** Runs (or, with dryRun, previews) consolidation. Never retried; default deadline 120 s. */
  consolidate(
    request: MessageInitShape<typeof ConsolidateRequestSchema>,
    options?: CallOptions,
  ): Promise<ConsolidateResponse> {
    return this.call("Consolidate", request, options, (r, o) => this.raw.consolidate(r, o));
  }

  /**
   * Appends messages to a session, creating it on first use. With `extract`,
   * user messages also become memories through the write rules (`extracted`
   * says what each became; with `extractAsync`, later `session.extraction`).
   * Roles may be given by name ("user", "assistant", "system", "tool").
   * Retried on UNAVAILABLE only if `requestId` is set.
   */
  appendMessages(request: AppendMessagesInput, options?: CallOptions): Promise<AppendMessagesResponse> {
    const init = definedFields({ ...request, messages: request.messages.map(toMessage) });
    return this.call("AppendMessages", init, options, (r, o) => this.rawSessions.appendMessages(r, o));
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
    return this.call("GetContext", request, options, (r, o) => this.rawSessions.getContext(r, o));
  }

  /** Returns a session's counters, summary and extraction status (NOT_FOUND if none). */
  getSession(
    request: MessageInitShape<typeof GetSessionRequestSchema>,
    options?: CallOptions,
  ): Promise<GetSessionResponse> {
    return this.call("GetSession", request, options, (r, o) => this.rawSessions.getSession(r, o));
  }

  /** Returns one page of the user's sessions, newest first. */
  listSessions(
    request: MessageInitShape<typeof ListSessionsRequestSchema>,
    options?: CallOptions,
  ): Promise<ListSessionsResponse> {
    return this.call("ListSessions", request, options, (r, o) => this.rawSessions.listSessions(r, o));
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
    return this.call("EndSession", request, options, (r, o) => this.rawSessions.endSession(r, o));
  }

  /**
   * Closes the connection gracefully: waits for the calls in flight (their
   * retries included), then sends HTTP/2 GOAWAY with NO_ERROR and resolves
   * once the connection is closed. Calls made afterwards connect again.
   */
  async close(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
    await this.closeTransport();
  }

  /** A call of one of the contract's RPCs, with its default deadline and retry rule. */
  private call<Req, Res>(
    method: MethodName,
    request: Req,
    options: CallOptions | undefined,
    fn: (request: Req, options: ConnectCallOptions) => Promise<Res>,
  ): Promise<Res> {
    const rpc: Rpc = {
      service: SESSION_METHODS.has(method) ? SessionService.typeName : MemoryService.typeName,
      method,
      timeoutMs:
        method === "Recall"
          ? this.recallTimeoutMs
          : method === "Consolidate"
            ? this.consolidateTimeoutMs
            : this.timeoutMs,
      retryable: isIdempotent(method, request as { requestId?: string | undefined }),
    };
    return this.invoke(rpc, request, options, fn);
  }

  private track<T>(call: Promise<T>): Promise<T> {
    this.inFlight.add(call);
    const settled = () => this.inFlight.delete(call);
    call.then(settled, settled);
    return call;
  }

  private invoke<Req, Res>(
    rpc: Rpc,
    request: Req,
    options: CallOptions | undefined,
    fn: (request: Req, options: ConnectCallOptions) => Promise<Res>,
  ): Promise<Res> {
    return this.track(callWithRetries(rpc, request, options, fn, this.retry));
  }
}
