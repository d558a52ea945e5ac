import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import { ErrorReason } from "./gen/recalld/v1/error_reason_pb.js";
import type { WriteResult } from "./gen/recalld/v1/memory_service_pb.js";

/** The ErrorInfo domain of every error recalld itself raises. */
export const RECALLD_ERROR_DOMAIN = "recalld.v1";

/**
 * What a write of more than 100 memories (sent in chunks) had stored when
 * one of its chunks failed.
 */
export interface WrittenBeforeFailure {
  /** Chunks stored before the failed one (the failed chunk is number `chunks`, 0-based). */
  chunks: number;
  /** Memories stored before the failed chunk: the first `memories` of the request. */
  memories: number;
  /** Their results, in request order. */
  results: WriteResult[];
}

/** One offending request field, from google.rpc.BadRequest. */
export interface FieldViolation {
  /** Path of the field, for example `memories[0].content`. */
  field: string;
  /** Human-readable explanation. */
  description: string;
  /** Machine-readable reason for this field, if the server set one. */
  reason: string;
}

const CODE_NAMES: Record<Code, string> = {
  [Code.Canceled]: "CANCELLED",
  [Code.Unknown]: "UNKNOWN",
  [Code.InvalidArgument]: "INVALID_ARGUMENT",
  [Code.DeadlineExceeded]: "DEADLINE_EXCEEDED",
  [Code.NotFound]: "NOT_FOUND",
  [Code.AlreadyExists]: "ALREADY_EXISTS",
  [Code.PermissionDenied]: "PERMISSION_DENIED",
  [Code.ResourceExhausted]: "RESOURCE_EXHAUSTED",
  [Code.FailedPrecondition]: "FAILED_PRECONDITION",
  [Code.Aborted]: "ABORTED",
  [Code.OutOfRange]: "OUT_OF_RANGE",
  [Code.Unimplemented]: "UNIMPLEMENTED",
  [Code.Internal]: "INTERNAL",
  [Code.Unavailable]: "UNAVAILABLE",
  [Code.DataLoss]: "DATA_LOSS",
  [Code.Unauthenticated]: "UNAUTHENTICATED",
};

/** The canonical gRPC name of a status code, for example `NOT_FOUND`. */
export function codeName(code: Code): string {
  return CODE_NAMES[code] ?? `CODE_${code}`;
}

/**
 * A failed recalld call.
 *
 * `code` is the gRPC status code (Connect's `Code` enum uses the same
 * numbers). `reason`, `domain` and `errorMetadata` come from the
 * google.rpc.ErrorInfo detail, `fieldViolations` from google.rpc.BadRequest;
 * both travel in the `grpc-status-details-bin` trailer. Errors that never
 * reached the server (connection refused, deadline) have no details.
 */
export class RecalldError extends Error {
  override name = "RecalldError";
  /** gRPC status code. */
  readonly code: Code;
  /** ErrorInfo.reason, for example `ETAG_MISMATCH`; empty if absent. */
  readonly reason: string;
  /** ErrorInfo.domain, `recalld.v1` for recalld's own errors; empty if absent. */
  readonly domain: string;
  /** ErrorInfo.metadata. */
  readonly errorMetadata: Readonly<Record<string, string>>;
  /** BadRequest.field_violations, in server order. */
  readonly fieldViolations: readonly FieldViolation[];
  /** Response headers and trailers of the failed call. */
  readonly metadata: Headers;
  /** The server's status message, without any prefix. */
  readonly rawMessage: string;
  /**
   * Set when a chunked write (more than 100 memories) failed part way: what
   * was already stored. Retrying the same call with the same `requestId`
   * replays those chunks and sends the rest.
   */
  readonly written: WrittenBeforeFailure | undefined;

  constructor(init: {
    code: Code;
    message: string;
    reason?: string | undefined;
    domain?: string | undefined;
    errorMetadata?: Record<string, string> | undefined;
    fieldViolations?: FieldViolation[] | undefined;
    metadata?: Headers | undefined;
    cause?: unknown;
    written?: WrittenBeforeFailure | undefined;
  }) {
    const written = init.written;
    const note =
      written === undefined
        ? ""
        : written.chunks === 0
          ? " (chunked write: the first chunk failed, nothing was written)"
          : ` (chunked write: the first ${written.memories} memories, ${written.chunks} chunk(s), ` +
            "were written before this chunk failed)";
    super(`[${codeName(init.code)}] ${init.message}${note}`, { cause: init.cause });
    this.written = written;
    this.code = init.code;
    this.rawMessage = init.message;
    this.reason = init.reason ?? "";
    this.domain = init.domain ?? "";
    this.errorMetadata = init.errorMetadata ?? {};
    this.fieldViolations = init.fieldViolations ?? [];
    this.metadata = init.metadata ?? new Headers();
  }

  /** The canonical gRPC name of `code`, for example `INVALID_ARGUMENT`. */
  get codeName(): string {
    return codeName(this.code);
  }

  /**
   * `reason` as the contract's ErrorReason enum; UNSPECIFIED when the reason
   * is absent, unknown, or from another domain.
   */
  get errorReason(): ErrorReason {
    if (this.domain !== RECALLD_ERROR_DOMAIN) return ErrorReason.UNSPECIFIED;
    const value = (ErrorReason as unknown as Record<string, number | undefined>)[this.reason];
    return typeof value === "number" ? (value as ErrorReason) : ErrorReason.UNSPECIFIED;
  }

  /** Turns anything thrown by a call into a RecalldError (idempotent). */
  static from(err: unknown): RecalldError {
    if (err instanceof RecalldError) return err;
    const ce = ConnectError.from(err);
    const info = safeFindDetails(ce, ErrorInfoSchema)[0];
    const violations = safeFindDetails(ce, BadRequestSchema).flatMap((b) => b.fieldViolations);
    return new RecalldError({
      code: ce.code,
      message: ce.rawMessage,
      reason: info?.reason,
      domain: info?.domain,
      errorMetadata: info ? { ...info.metadata } : undefined,
      fieldViolations: violations.map((v) => ({
        field: v.field,
        description: v.description,
        reason: v.reason,
      })),
      metadata: ce.metadata,
      cause: err,
    });
  }
}

function safeFindDetails<Desc extends DescMessage>(ce: ConnectError, desc: Desc): MessageShape<Desc>[] {
  try {
    return ce.findDetails(desc);
  } catch {
    // A malformed detail must not hide the status code.
    return [];
  }
}
