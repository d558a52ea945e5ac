import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { ConnectError } from "@connectrpc/connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import { BadRequestSchema, ErrorInfoSchema, RetryInfoSchema } from "../../src/gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../src/gen/google/rpc/status_pb.js";
import { Code, ErrorReason, RecalldError } from "../../src/index.js";

/** Trailers as a gRPC server sends them for a failed call. */
function trailers(status: ReturnType<typeof create<typeof StatusSchema>>): Headers {
  const bin = Buffer.from(toBinary(StatusSchema, status)).toString("base64").replace(/=+$/, "");
  return new Headers({
    "grpc-status": String(status.code),
    "grpc-message": encodeURIComponent(status.message),
    "grpc-status-details-bin": bin,
  });
}

function decode(status: ReturnType<typeof create<typeof StatusSchema>>): RecalldError {
  const ce = findTrailerError(trailers(status));
  assert.ok(ce, "the trailers carry an error");
  return RecalldError.from(ce);
}

describe("RecalldError.from", () => {
  it("decodes code, ErrorInfo and BadRequest from grpc-status-details-bin", () => {
    const err = decode(
      create(StatusSchema, {
        code: Code.InvalidArgument,
        message: "memories[0].content: must not be empty",
        details: [
          anyPack(
            ErrorInfoSchema,
            create(ErrorInfoSchema, {
              reason: "INVALID_FIELD",
              domain: "recalld.v1",
              metadata: { field: "memories[0].content" },
            }),
          ),
          anyPack(
            BadRequestSchema,
            create(BadRequestSchema, {
              fieldViolations: [
                { field: "memories[0].content", description: "must not be empty" },
                { field: "memories[1].importance", description: "must be within 0..1", reason: "OUT_OF_RANGE" },
              ],
            }),
          ),
          // Unknown detail types are skipped.
          anyPack(RetryInfoSchema, create(RetryInfoSchema, {})),
        ],
      }),
    );
    assert.equal(err.code, Code.InvalidArgument);
    assert.equal(err.codeName, "INVALID_ARGUMENT");
    assert.equal(err.rawMessage, "memories[0].content: must not be empty");
    assert.equal(err.message, "[INVALID_ARGUMENT] memories[0].content: must not be empty");
    assert.equal(err.reason, "INVALID_FIELD");
    assert.equal(err.domain, "recalld.v1");
    assert.equal(err.errorReason, ErrorReason.INVALID_FIELD);
    assert.deepEqual(err.errorMetadata, { field: "memories[0].content" });
    assert.deepEqual(err.fieldViolations, [
      { field: "memories[0].content", description: "must not be empty", reason: "" },
      { field: "memories[1].importance", description: "must be within 0..1", reason: "OUT_OF_RANGE" },
    ]);
    assert.ok(err instanceof Error);
    assert.ok(err.cause instanceof ConnectError);
  });

  it("maps the ETAG_MISMATCH reason of an ABORTED status", () => {
    const err = decode(
      create(StatusSchema, {
        code: Code.Aborted,
        message: "etag mismatch",
        details: [anyPack(ErrorInfoSchema, create(ErrorInfoSchema, { reason: "ETAG_MISMATCH", domain: "recalld.v1" }))],
      }),
    );
    assert.equal(err.codeName, "ABORTED");
    assert.equal(err.errorReason, ErrorReason.ETAG_MISMATCH);
    assert.deepEqual(err.fieldViolations, []);
  });

  it("keeps reasons of another domain as strings only", () => {
    const err = decode(
      create(StatusSchema, {
        code: Code.NotFound,
        message: "nope",
        details: [
          anyPack(ErrorInfoSchema, create(ErrorInfoSchema, { reason: "MEMORY_NOT_FOUND", domain: "proxy.example" })),
        ],
      }),
    );
    assert.equal(err.reason, "MEMORY_NOT_FOUND");
    assert.equal(err.errorReason, ErrorReason.UNSPECIFIED);
  });

  it("handles a status without details", () => {
    const ce = findTrailerError(new Headers({ "grpc-status": "5", "grpc-message": "not%20found" }));
    const err = RecalldError.from(ce);
    assert.equal(err.code, Code.NotFound);
    assert.equal(err.rawMessage, "not found");
    assert.equal(err.reason, "");
    assert.equal(err.errorReason, ErrorReason.UNSPECIFIED);
    assert.deepEqual(err.fieldViolations, []);
  });

  it("keeps the code when a detail is malformed", () => {
    const ce = new ConnectError("bad detail", Code.Internal);
    ce.details.push({ type: "google.rpc.ErrorInfo", value: new Uint8Array([0xff, 0xff, 0xff]) });
    const err = RecalldError.from(ce);
    assert.equal(err.code, Code.Internal);
    assert.equal(err.reason, "");
  });

  it("wraps non-gRPC errors as UNKNOWN and is idempotent", () => {
    const err = RecalldError.from(new Error("boom"));
    assert.equal(err.code, Code.Unknown);
    assert.equal(RecalldError.from(err), err);
  });
});
