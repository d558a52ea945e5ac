/**
 * Writes of more memories than the server takes in one call: consecutive
 * chunks of at most MAX_WRITE_MEMORIES, in order, chunk i with request id
 * `<requestId>#i`, the results returned as one response in request order.
 */

import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { RecalldError } from "./errors.js";
import {
  type WriteRequest,
  WriteRequestSchema,
  type WriteResponse,
  WriteResponseSchema,
  type WriteResult,
} from "./gen/recalld/v1/memory_service_pb.js";
import { MAX_REQUEST_ID_CHARS, MAX_WRITE_MEMORIES } from "./options.js";

/**
 * Sends `init` with `send`, one chunk at a time. A request id whose chunk ids
 * would exceed MAX_REQUEST_ID_CHARS is refused (INVALID_ARGUMENT) before
 * anything is sent. If a chunk fails, the RecalldError's `written` says what
 * the earlier chunks stored, and its message and field violations number the
 * memories of the whole request (`memories[120]`, not the chunk's `[20]`).
 */
export async function writeInChunks(
  init: MessageInitShape<typeof WriteRequestSchema>,
  send: (chunk: WriteRequest) => Promise<WriteResponse>,
): Promise<WriteResponse> {
  const request = create(WriteRequestSchema, init);
  const { memories, requestId } = request;
  const chunks = Math.ceil(memories.length / MAX_WRITE_MEMORIES);
  const lastId = `${requestId}#${chunks - 1}`;
  if (requestId !== "" && [...lastId].length > MAX_REQUEST_ID_CHARS) {
    const description =
      `must leave room for the chunk suffix: a write of ${memories.length} memories is sent in ${chunks} ` +
      `chunks with request ids up to ${JSON.stringify(lastId)}, over ${MAX_REQUEST_ID_CHARS} characters`;
    throw new RecalldError({
      code: Code.InvalidArgument,
      message: `request_id: ${description}`,
      reason: "INVALID_FIELD",
      fieldViolations: [{ field: "request_id", description, reason: "TOO_LONG" }],
    });
  }
  const results: WriteResult[] = [];
  for (let i = 0; i < chunks; i++) {
    const offset = i * MAX_WRITE_MEMORIES;
    const chunk: WriteRequest = {
      ...request,
      memories: memories.slice(offset, offset + MAX_WRITE_MEMORIES),
      requestId: requestId === "" ? "" : `${requestId}#${i}`,
    };
    try {
      const response = await send(chunk);
      results.push(...response.results);
    } catch (e) {
      const err = RecalldError.from(e);
      // The server numbers the memories of the chunk; the caller numbers those of the whole request.
      const renumber = (text: string) =>
        text.replace(/\bmemories\[(\d+)\]/g, (_, j: string) => `memories[${offset + Number(j)}]`);
      throw new RecalldError({
        code: err.code,
        message: renumber(err.rawMessage),
        reason: err.reason,
        domain: err.domain,
        errorMetadata: { ...err.errorMetadata },
        fieldViolations: err.fieldViolations.map((v) => ({ ...v, field: renumber(v.field) })),
        metadata: err.metadata,
        cause: err,
        written: { chunks: i, memories: offset, results },
      });
    }
  }
  return create(WriteResponseSchema, { results });
}
