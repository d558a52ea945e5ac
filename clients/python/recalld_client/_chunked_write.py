"""Writes of more memories than the server takes in one call, as consecutive chunks.

The server takes at most `MAX_WRITE_BATCH` memories per Write. A larger write goes
out in order, chunk i with request id `<request_id>#i`, so that repeating the
whole write replays the chunks already committed; the results come back as one
response in input order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import grpc

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client._errors import FieldViolation, RecalldError

MAX_WRITE_BATCH = 100
"""The server's limit of memories per Write; larger writes are sent in chunks of this size."""
MAX_REQUEST_ID_CHARS = 128

SendChunk = Callable[[memory_service_pb2.WriteRequest], Awaitable[memory_service_pb2.WriteResponse]]
"""One Write of one chunk (retried only when its request carries a request id)."""


async def write_in_chunks(
    send: SendChunk, user_id: str, memories: Sequence[memory_pb2.Memory], request_id: str
) -> memory_service_pb2.WriteResponse:
    """Sends `memories` with `send` in chunks of at most MAX_WRITE_BATCH, in order.

    Raises:
        RecalldError: INVALID_ARGUMENT (field `request_id`, reason TOO_LONG) when a
            chunk's request id would be over 128 characters; nothing is sent. A
            chunk's error, saying what the earlier chunks wrote (`after_chunks`).
    """
    chunks = [
        memories[start : start + MAX_WRITE_BATCH]
        for start in range(0, len(memories), MAX_WRITE_BATCH)
    ]
    chunk_ids = [f"{request_id}#{i}" if request_id else "" for i in range(len(chunks))]
    if len(chunk_ids[-1]) > MAX_REQUEST_ID_CHARS:
        # The error the server would give for the longest chunk id, before any
        # chunk is committed (as the Node and Go clients do).
        longest = MAX_REQUEST_ID_CHARS - len(chunk_ids[-1]) + len(request_id)
        description = (
            f"is too long for a write of {len(memories)} memories: chunk request id "
            f"{chunk_ids[-1]!r} would be over {MAX_REQUEST_ID_CHARS} characters "
            f"(use at most {longest})"
        )
        raise RecalldError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"request_id: {description}",
            "INVALID_FIELD",
            (FieldViolation("request_id", description, "TOO_LONG"),),
        )
    response = memory_service_pb2.WriteResponse()
    for index, (chunk, chunk_id) in enumerate(zip(chunks, chunk_ids, strict=True)):
        request = memory_service_pb2.WriteRequest(
            user_id=user_id, memories=chunk, request_id=chunk_id
        )
        try:
            part = await send(request)
        except RecalldError as error:
            raise error.after_chunks(index, MAX_WRITE_BATCH, len(chunks)) from None
        response.results.extend(part.results)
    return response
