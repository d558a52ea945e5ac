/**
 * recalld client for Node.js.
 *
 * `RecalldClient` wraps the generated recalld.v1.MemoryService and
 * recalld.v1.SessionService stubs (protobuf-es v2 + Connect over gRPC). The generated message types, enums and
 * schemas are re-exported so that callers need only this package, with the
 * protobuf-es helpers that work on them: `toJson(MemorySchema, memory)` (or
 * `toJsonString`) is the way to serialise a message, since JSON.stringify
 * throws on its 64-bit integer fields (bigint); `fromJson` reads it back.
 */

export {
  create,
  fromBinary,
  fromJson,
  fromJsonString,
  type JsonObject,
  type JsonValue,
  type MessageInitShape,
  type MessageShape,
  toBinary,
  toJson,
  toJsonString,
} from "@bufbuild/protobuf";

export { Code, ConnectError } from "@connectrpc/connect";
export {
  DRAINING_HEADER,
  DRAINING_HOLD_MS,
  INITIAL_DOWN_MS,
  MAX_DOWN_MS,
  ReplicaHealth,
  UserAffinityTransport,
} from "./affinity.js";
export {
  type AddressResolver,
  DEFAULT_RESOLVE_INTERVAL_MS,
  type Member,
  ReplicaSet,
  RoundRobinTransport,
  systemResolver,
} from "./balancing.js";
export { RecalldClient } from "./client.js";
export {
  codeName,
  type FieldViolation,
  RECALLD_ERROR_DOMAIN,
  RecalldError,
  type WrittenBeforeFailure,
} from "./errors.js";
export * from "./gen/recalld/v1/error_reason_pb.js";
export * from "./gen/recalld/v1/memory_pb.js";
export * from "./gen/recalld/v1/memory_service_pb.js";
export * from "./gen/recalld/v1/session_service_pb.js";
export {
  Health,
  type HealthCheckRequest,
  HealthCheckRequestSchema,
  type HealthCheckResponse,
  HealthCheckResponseSchema,
  type HealthStatus,
  healthStatusName,
} from "./health.js";
export { type AppendMessagesInput, type MessageInput, type MessageRoleName, toMessage } from "./messages.js";
export {
  AUTHORIZATION_HEADER,
  buildMetadata,
  injectTraceContext,
  type MetadataOptions,
  metadataInterceptor,
  otelContextKey,
  TENANT_HEADER,
  traceContextInterceptor,
} from "./metadata.js";
export {
  type CallOptions,
  DEFAULT_ADDRESS,
  DEFAULT_CONSOLIDATE_TIMEOUT_MS,
  DEFAULT_RECALL_TIMEOUT_MS,
  DEFAULT_TIMEOUT_MS,
  type HealthOptions,
  MAX_REQUEST_ID_CHARS,
  MAX_WRITE_MEMORIES,
  type RecalldClientOptions,
  type RetryOptions,
  ROUTINGS,
  type Routing,
} from "./options.js";
export {
  backoffMs,
  DEFAULT_RETRY_POLICY,
  isIdempotent,
  type MethodName,
  RETRY_SAFE_RPCS,
  type RetryPolicy,
  type SessionMethodName,
  shouldRetry,
} from "./retry.js";
export { isLoopbackHost, resolveTarget, type Target, type TlsOptions } from "./targets.js";
export {
  replicaOrder,
  replicaWeight,
  routingKey,
  USER_ROUTING_HEADER,
  userIdOf,
  userRoutingInterceptor,
} from "./user-routing.js";
export { VERSION } from "./version.js";
