"""Client-side view of recalld errors: code, ErrorInfo reason, field violations."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any

import grpc
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2


@dataclasses.dataclass(frozen=True, slots=True)
class FieldViolation:
    """One invalid request field as the server named it (e.g. `memories[0].content`).

    `reason` is machine-readable (REQUIRED, TOO_LONG, OUT_OF_RANGE, …; AIP-193).
    """

    field: str
    description: str
    reason: str = ""


SHED_CAUSES = frozenset({"server_overloaded", "rate_limited"})
"""ErrorInfo causes of calls refused before any work."""

_STATUS_DETAILS_KEY = "grpc-status-details-bin"

# What gRPC reports when the two ends disagree about TLS. A TLS client reading a
# plaintext HTTP/2 server's first bytes as a TLS record fails the handshake with
# WRONG_VERSION_NUMBER; a plaintext client's HTTP/2 preface makes a TLS server close
# the connection before any HTTP/2 frame, which the client sees as "Socket closed".
_TLS_CLIENT_PLAINTEXT_SERVER = ("wrong_version_number", "wrong version number")
_PLAINTEXT_CLIENT_TLS_SERVER = ("socket closed", "connection reset")

TLS_CLIENT_HINT = (
    " (TLS mismatch? the client uses TLS and the server may be plaintext; "
    "pass tls=False for a plaintext server)"
)
PLAINTEXT_CLIENT_HINT = (
    " (TLS mismatch? the client uses plaintext and the server may require TLS; "
    "pass tls=True, and root_certificates for a private CA)"
)


def tls_mismatch_hint(code: grpc.StatusCode, message: str, tls: bool | None) -> str:
    """The hint to append to a transport error that looks like a TLS mismatch, else ""."""
    if tls is None or code not in (
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
    ):
        return ""
    text = message.lower()
    if tls and any(s in text for s in _TLS_CLIENT_PLAINTEXT_SERVER):
        return TLS_CLIENT_HINT
    if not tls and any(s in text for s in _PLAINTEXT_CLIENT_TLS_SERVER):
        return PLAINTEXT_CLIENT_HINT
    return ""


def _status_details(metadata: Iterable[Any] | None) -> list[Any]:
    """The google.rpc.Status details the server put in the trailers (none if absent)."""
    for key, value in metadata or ():
        if key == _STATUS_DETAILS_KEY and isinstance(value, bytes):
            try:
                return list(status_pb2.Status.FromString(value).details)
            except DecodeError:
                return []
    return []


_MEMORY_INDEX = re.compile(r"^memories\[(\d+)\]")


class RecalldError(Exception):
    """A failed call, with the gRPC code and the server's structured details."""

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        reason: str = "",
        field_violations: tuple[FieldViolation, ...] = (),
        retry_delay_s: float | None = None,
        cause: str = "",
        *,
        tls_mismatch: bool = False,
        written: int | None = None,
        written_chunks: int | None = None,
    ) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.reason = reason
        self.field_violations = field_violations
        self.retry_delay_s = retry_delay_s
        """From google.rpc.RetryInfo: when the server advises trying again."""
        self.cause = cause
        """ErrorInfo's `cause` metadata (e.g. "server_overloaded")."""
        self.tls_mismatch = tls_mismatch
        """The transport failure looks like TLS on one end and plaintext on the other."""
        self.written = written
        """For a write sent in chunks: how many memories earlier chunks had already
        written when this one failed (None for a write of one request)."""
        self.written_chunks = written_chunks
        """For a write sent in chunks: how many chunks had already been written."""

    @property
    def shed(self) -> bool:
        """The server refused the call before doing anything.

        At capacity, or over a rate limit: any call may be retried after `retry_delay_s`.
        """
        return self.code == grpc.StatusCode.RESOURCE_EXHAUSTED and self.cause in SHED_CAUSES

    @classmethod
    def from_rpc_error(cls, error: grpc.aio.AioRpcError, tls: bool | None = None) -> RecalldError:
        """Decodes google.rpc.Status details from the call's trailers.

        Args:
            error: The failed call.
            tls: Whether the client spoke TLS (None: unknown), to recognise a TLS
                mismatch and say so in the message.
        """
        reason = cause = ""
        retry_delay_s: float | None = None
        violations: list[FieldViolation] = []
        for detail in _status_details(error.trailing_metadata()):
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason = info.reason
                cause = info.metadata.get("cause", "")
            elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                retry = error_details_pb2.RetryInfo()
                detail.Unpack(retry)
                retry_delay_s = retry.retry_delay.ToMilliseconds() / 1000
            elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations.extend(
                    FieldViolation(v.field, v.description, v.reason) for v in bad.field_violations
                )
        code, message = error.code(), error.details() or ""
        hint = tls_mismatch_hint(code, message, tls)
        if hint:
            # INTERNAL or UNKNOWN here is the transport's wording, not the server's:
            # no call reached it.
            code = grpc.StatusCode.UNAVAILABLE
        return cls(
            code,
            message + hint,
            reason,
            tuple(violations),
            retry_delay_s,
            cause,
            tls_mismatch=bool(hint),
        )

    def after_chunks(self, chunks: int, chunk_size: int, total_chunks: int) -> RecalldError:
        """This error of chunk `chunks` (0-based) of a write, saying what was already written.

        Field violations are renumbered from the chunk's `memories[i]` to the index
        in the caller's whole list.
        """
        offset = chunks * chunk_size
        violations = tuple(
            FieldViolation(
                _MEMORY_INDEX.sub(lambda m: f"memories[{int(m.group(1)) + offset}]", v.field),
                v.description,
                v.reason,
            )
            for v in self.field_violations
        )
        note = (
            f" (chunk {chunks + 1} of {total_chunks} failed; {offset} memories in "
            f"{chunks} earlier chunks were already written)"
        )
        return RecalldError(
            self.code,
            self.message + note,
            self.reason,
            violations,
            self.retry_delay_s,
            self.cause,
            tls_mismatch=self.tls_mismatch,
            written=offset,
            written_chunks=chunks,
        )
