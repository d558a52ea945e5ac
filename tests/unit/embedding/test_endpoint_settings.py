"""The endpoint flags and their checks: every bad value is named, none is silently used."""

from __future__ import annotations

import argparse

import pytest

from recalld_server.embedding.endpoint_settings import EndpointSettings
from recalld_server.flags import add_embedding_endpoint_flags, embedding_endpoint

URL = "http://127.0.0.1:9/v1"


def parsed(argv: list[str], environ: dict[str, str] | None = None) -> EndpointSettings | None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--embedding-model", default="")  # each command declares its own
    add_embedding_endpoint_flags(parser, environ or {})
    return embedding_endpoint(parser.parse_args(argv), environ or {}, startup_timeout_s=1.0)


def test_the_linger_is_given_in_milliseconds_by_flag_or_environment() -> None:
    base = ["--embedding-base-url", URL, "--embedding-model", "m"]
    default = parsed(base)
    assert default is not None and default.linger_s == pytest.approx(0.005)
    flagged = parsed([*base, "--embedding-linger-ms", "12.5"])
    assert flagged is not None and flagged.linger_s == pytest.approx(0.0125)
    from_env = parsed(base, {"RECALLD_EMBEDDING_LINGER_MS": "0"})
    assert from_env is not None and from_env.linger_s == 0


def test_every_bad_value_is_named_at_once() -> None:
    with pytest.raises(ValueError) as refused:
        EndpointSettings(base_url="ftp://x", model=" ", max_batch=0, linger_s=-0.001, timeout_s=0)
    message = str(refused.value)
    for part in ("http:// or https://", "model name", "max batch", "linger", "timeouts"):
        assert part in message


@pytest.mark.parametrize("linger_ms", ["-1", "1001"])
def test_a_linger_out_of_range_stops_start_up(linger_ms: str) -> None:
    argv = [
        "--embedding-base-url",
        URL,
        "--embedding-model",
        "m",
        "--embedding-linger-ms",
        linger_ms,
    ]
    with pytest.raises(SystemExit, match="linger must be between 0 and 1000 ms"):
        parsed(argv)
