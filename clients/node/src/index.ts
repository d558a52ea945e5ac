/**
 * recalld client for Node.js.
 *
 * `RecalldClient` wraps the generated recalld.v1.MemoryService stubs
 * (protobuf-es v2 + Connect over gRPC). The generated message types, enums and
 * schemas are re-exported so that callers need only this package.
 */
export {
  RecalldClient,
  DEFAULT_TIMEOUT_MS,
  DEFAULT_RECALL_TIMEOUT_MS,
  isLoopbackHost,
  resolveTarget,
  type CallOptions,
  type RecalldClientOptions,
  type Target,
  type TlsOptions,
} from "./client.js";
export {
  DEFAULT_RESOLVE_INTERVAL_MS,
  RoundRobinTransport,
  systemResolver,
  type AddressResolver,
} from "./balancing.js";
export { RecalldError, RECALLD_ERROR_DOMAIN, codeName, type FieldViolation } from "./errors.js";
export {
  AUTHORIZATION_HEADER,
  TENANT_HEADER,
  buildMetadata,
  injectTraceContext,
  metadataInterceptor,
  otelContextKey,
  traceContextInterceptor,
  type MetadataOptions,
} from "./metadata.js";
export {
  DEFAULT_RETRY_POLICY,
  backoffMs,
  isIdempotent,
  RETRY_SAFE_RPCS,
  shouldRetry,
  type MethodName,
  type RetryPolicy,
} from "./retry.js";
export { VERSION } from "./version.js";
export { Code, ConnectError } from "@connectrpc/connect";
export * from "./gen/recalld/v1/memory_pb.js";
export * from "./gen/recalld/v1/memory_service_pb.js";
export * from "./gen/recalld/v1/error_reason_pb.js";
