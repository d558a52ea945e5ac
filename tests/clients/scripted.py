"""An in-process recalld.v1.MemoryService that answers from a script and records each call.

For the client's own behaviour (retries, deadlines, error decoding, chunking) the
answers must be chosen by the test: N failures then a success, a status with
rich details, a call that hangs. Everything else about the server is tested
against the real one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message
from google.rpc import status_pb2

from recalld.v1 import memory_service_pb2

SERVICE = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"]

Context = grpc.aio.ServicerContext[Any, Any]
Answer = Callable[[Any, Context], Awaitable[Any]]


@dataclasses.dataclass(frozen=True)
class Call:
    """One call as the server saw it."""

    rpc: str
    request: Any
    metadata: dict[str, str]
    time_remaining: float | None
    at: float


def reply(message: Message) -> Answer:
    """Answers with `message`."""

    async def answer(request: Any, context: Context) -> Message:
        return message

    return answer


def fail(code: grpc.StatusCode, message: str = "", *details: Message) -> Answer:
    """Fails with `code`, and a google.rpc.Status carrying `details` in the trailers."""

    async def answer(request: Any, context: Context) -> NoReturn:
        packed = []
        for detail in details:
            wrapped = any_pb2.Any()
            wrapped.Pack(detail)
            packed.append(wrapped)
        status = status_pb2.Status(code=code.value[0], message=message, details=packed)
        await context.abort(
            code,
            message,
            trailing_metadata=(("grpc-status-details-bin", status.SerializeToString()),),
        )
        raise AssertionError("abort returned")

    return answer


def hang(seconds: float, then: Message) -> Answer:
    """Answers nothing for `seconds` (past the client's deadline), then `then`."""

    async def answer(request: Any, context: Context) -> Message:
        await asyncio.sleep(seconds)
        return then

    return answer


class ScriptedMemoryService:
    """Answers each RPC with its next scripted answer; the last one repeats."""

    def __init__(self, **answers: list[Answer] | Answer) -> None:
        self._answers = {rpc: a if isinstance(a, list) else [a] for rpc, a in answers.items()}
        self.calls: list[Call] = []

    def of(self, rpc: str) -> list[Call]:
        """The calls of one RPC, in order."""
        return [c for c in self.calls if c.rpc == rpc]

    def register(self, server: grpc.aio.Server) -> None:
        """Adds the scripted RPCs to `server`."""
        handlers = {}
        for rpc in self._answers:
            method = SERVICE.methods_by_name[rpc]
            handlers[rpc] = grpc.unary_unary_rpc_method_handler(
                self._handler(rpc),
                request_deserializer=getattr(memory_service_pb2, method.input_type.name).FromString,
                response_serializer=lambda m: m.SerializeToString(),
            )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE.full_name, handlers),)
        )

    def _handler(self, rpc: str) -> Answer:
        async def handle(request: Any, context: Context) -> Any:
            metadata = {k: v for k, v in context.invocation_metadata() or () if isinstance(v, str)}
            self.calls.append(
                Call(rpc, request, metadata, context.time_remaining(), time.monotonic())
            )
            script = self._answers[rpc]
            answer = script.pop(0) if len(script) > 1 else script[0]
            return await answer(request, context)

        return handle
