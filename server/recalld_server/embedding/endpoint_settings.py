"""What an operator configures for an OpenAI-compatible embedding endpoint, and the id it gives.

The settings are validated when built (`EndpointSettings.__post_init__`), so a bad
flag stops start-up with every problem named; the model id stored with each memory
names the provider, the model and the dimension (`model_id_for`).
"""

from __future__ import annotations

import dataclasses
import urllib.parse

from recalld_server.embedding.openai_wire import ENCODINGS, Framing, Purpose

MIN_CUT_CHARS = 256
"""A text refused as too long is halved until it is accepted or this short."""

MAX_LINGER_S = 1.0
"""The longest a request may wait for company (past that it is a delay, not batching)."""


@dataclasses.dataclass(frozen=True, slots=True)
class EndpointSettings:
    """Where and how to reach the endpoint.

    Attributes:
        base_url: The API root, e.g. `http://tei:8080/v1` (`/embeddings` is added).
        model: The `model` field of every request: the remote model's name.
        api_key: Sent as `Authorization: Bearer <key>`; empty: no header.
        dimensions: Sent as `dimensions` (models that can shorten their vectors).
        document: How stored memories are framed (prefix, input_type).
        query: How recall queries are framed.
        max_batch: Most texts one request carries.
        max_in_flight: Most requests at once (one connection each).
        linger_s: While another request is out, how long the next one waits for
            more texts before it leaves (unless it is full); 0: never waits. An
            idle server never waits: a request with none out leaves at once.
        timeout_s: Deadline of one request, connection and answer included.
        max_input_chars: Longer texts are cut (`openai_wire.cut`) before sending.
        encoding_format: "auto" asks for base64 vectors and falls back to numbers
            when the probe's base64 request is refused or answered wrongly;
            "base64" or "float" asks for that only.
        attempts: Tries per request, the first included.
        startup_timeout_s: How long the start-up probe retries an endpoint that
            cannot be reached yet (one starting beside recalld).
        circuit_failures: Consecutive failed requests that open the circuit.
        circuit_cooldown_s: How long an open circuit refuses calls.
    """

    base_url: str
    model: str
    api_key: str = dataclasses.field(default="", repr=False)
    dimensions: int | None = None
    document: Framing = dataclasses.field(default_factory=Framing)
    query: Framing = dataclasses.field(default_factory=Framing)
    max_batch: int = 32
    max_in_flight: int = 4
    linger_s: float = 0.005
    timeout_s: float = 30.0
    max_input_chars: int = 8192
    encoding_format: str = "auto"
    attempts: int = 4
    startup_timeout_s: float = 30.0
    circuit_failures: int = 5
    circuit_cooldown_s: float = 10.0

    def __post_init__(self) -> None:
        problems = []
        if not self.base_url.startswith(("http://", "https://")):
            problems.append("the base URL must be an http:// or https:// URL")
        if not self.model.strip():
            problems.append("a model name is required")
        if self.dimensions is not None and self.dimensions < 1:
            problems.append("dimensions must be positive")
        if self.max_batch < 1 or self.max_in_flight < 1 or self.attempts < 1:
            problems.append("max batch, max in flight and attempts must be at least 1")
        if not 0 <= self.linger_s <= MAX_LINGER_S:
            problems.append(f"linger must be between 0 and {MAX_LINGER_S * 1000:g} ms")
        if self.timeout_s <= 0 or self.startup_timeout_s < 0 or self.circuit_cooldown_s < 0:
            problems.append("timeouts must be positive")
        if self.max_input_chars < MIN_CUT_CHARS:
            problems.append(f"max input chars must be at least {MIN_CUT_CHARS}")
        if self.circuit_failures < 1:
            problems.append("circuit failures must be at least 1")
        if self.encoding_format not in ENCODINGS:
            problems.append(f"encoding format must be one of {', '.join(ENCODINGS)}")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def url(self) -> str:
        """The embeddings endpoint."""
        return self.base_url.rstrip("/") + "/embeddings"

    @property
    def public_url(self) -> str:
        """The endpoint without credentials or query, for messages."""
        parts = urllib.parse.urlsplit(self.url)
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))

    def framing(self, purpose: Purpose) -> Framing:
        """The framing of one purpose's texts."""
        return self.query if purpose is Purpose.QUERY else self.document


def model_id_for(settings: EndpointSettings, dimension: int) -> str:
    """The id stored with every memory: provider, model and dimension.

    The host is left out on purpose: the same model moved to another server makes
    the same vectors. A model's vectors and another's never share a collection.
    """
    return f"openai:{settings.model}:{dimension}"


class EndpointProbeError(RuntimeError):
    """The endpoint cannot serve as configured (the message says why, for the operator)."""
