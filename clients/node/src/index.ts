/**
 * recalld client for Node.js.
 *
 * `RecalldClient` wraps the generated recalld.v1.MemoryService and
 * recalld.v1.SessionService stubs (protobuf-es v2 + Connect over gRPC). The generated message types, enums and
 * schemas are re-exported so that callers need only this package.
 */

export { Code, ConnectError } from "@connectrpc/connect";
export {
  type AddressResolver,
  DEFAULT_RESOLVE_INTERVAL_MS,
  RoundRobinTransport,
  systemResolver,
} from "./balancing.js";
export {
  type AppendMessagesInput,
  type CallOptions,
  DEFAULT_RECALL_TIMEOUT_MS,
  DEFAULT_TIMEOUT_MS,
  isLoopbackHost,
  type MessageInput,
  type MessageRoleName,
  RecalldClient,
  type RecalldClientOptions,
  resolveTarget,
  type Target,
  type TlsOptions,
  toMessage,
} from "./client.js";
export { codeName, type FieldViolation, RECALLD_ERROR_DOMAIN, RecalldError } from "./errors.js";
export * from "./gen/recalld/v1/error_reason_pb.js";
export * from "./gen/recalld/v1/memory_pb.js";
export * from "./gen/recalld/v1/memory_service_pb.js";
export * from "./gen/recalld/v1/session_service_pb.js";
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
  backoffMs,
  DEFAULT_RETRY_POLICY,
  isIdempotent,
  type MethodName,
  RETRY_SAFE_RPCS,
  type RetryPolicy,
  type SessionMethodName,
  shouldRetry,
} from "./retry.js";
export { VERSION } from "./version.js";
