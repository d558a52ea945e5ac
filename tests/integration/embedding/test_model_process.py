"""The embedding model in its own process: same vectors, restarts, errors and shutdown."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from recalld_server.embedding.model_process import (
    ModelFailedError,
    ModelProcess,
    ModelUnavailableError,
)
from recalld_server.embedding.usem import USEM3_DIMENSION, load_usem3, usem3_encoder

REPO = Path(__file__).resolve().parents[3]
TOYS = "tests.integration.embedding.toy_models"


@pytest.fixture
def toy_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lets the child import the toy loaders from this repository's tests package."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))


@pytest.fixture
def raising(toy_path: None) -> Iterator[ModelProcess]:
    model = ModelProcess(f"{TOYS}:raising_encoder")
    yield model
    model.close()


def _exited(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # reap it if it is our zombie
            if os.waitpid(pid, os.WNOHANG) != (0, 0):
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def test_the_child_computes_what_the_model_computes_in_process() -> None:
    texts = ["The user prefers oat milk.", "用户住在杭州", "SO-88231 已发货", ""]
    model = ModelProcess("recalld_server.embedding.usem:usem3_encoder")
    try:
        remote = model.encode(texts)
    finally:
        model.close()
    local = usem3_encoder()(texts)
    assert remote.shape == (4, USEM3_DIMENSION)
    assert remote.dtype == np.float32
    np.testing.assert_array_equal(remote, local)
    remote[0, 0] = 1.0  # callers may change what they get back


async def test_the_server_model_embeds_concurrent_callers_through_one_process() -> None:
    embedder = load_usem3()
    try:
        texts = [f"memory number {i}" for i in range(40)]
        one_by_one = [await embedder.embed([t]) for t in texts[:3]]
        together = await asyncio.gather(*(embedder.embed([t]) for t in texts))
    finally:
        await embedder.close()
    for single, batched in zip(one_by_one, together, strict=False):
        np.testing.assert_allclose(single, batched, atol=1e-5)
    assert all(v.shape == (1, USEM3_DIMENSION) for v in together)


def test_a_killed_child_is_replaced_within_the_call(raising: ModelProcess) -> None:
    first = raising.pid
    os.kill(first, signal.SIGKILL)
    assert _exited(first)
    vectors = raising.encode(["abc", "de"])
    assert vectors.tolist() == [[3.0, 1.0], [2.0, 1.0]]
    assert raising.pid != first


def test_a_model_error_is_the_callers_and_the_child_keeps_serving(raising: ModelProcess) -> None:
    pid = raising.pid
    with pytest.raises(ModelFailedError, match="ValueError: cannot embed boom"):
        raising.encode(["fine", "boom"])
    assert raising.encode(["fine"]).tolist() == [[4.0, 1.0]]
    assert raising.pid == pid


def test_what_a_model_prints_never_corrupts_the_replies(toy_path: None) -> None:
    model = ModelProcess(f"{TOYS}:chatty_encoder")
    try:
        for n in (1, 5, 64):
            assert model.encode(["x"] * n).shape == (n, 3)
    finally:
        model.close()


def test_a_model_that_cannot_load_fails_the_start_with_a_clear_error(toy_path: None) -> None:
    with pytest.raises(ModelUnavailableError, match="did not start"):
        ModelProcess(f"{TOYS}:broken_loader")


def test_a_child_that_dies_again_on_the_retry_fails_that_call_only(toy_path: None) -> None:
    model = ModelProcess(f"{TOYS}:dying_encoder")
    try:
        first = model.pid
        with pytest.raises(ModelUnavailableError, match="died twice"):
            model.encode(["fine", "die"])
        assert model.encode(["fine"]).shape == (1, 2)
        assert model.pid != first
    finally:
        model.close()


def test_a_hung_model_is_replaced_and_the_call_fails_in_time(toy_path: None) -> None:
    model = ModelProcess(f"{TOYS}:hanging_encoder", call_timeout_s=1.0)
    try:
        hung = model.pid
        began = time.monotonic()
        with pytest.raises(ModelUnavailableError, match="did not answer within 1 s"):
            model.encode(["hang"])
        assert time.monotonic() - began < 10
        assert _exited(hung)
        assert model.encode(["fine"]).shape == (1, 2)
    finally:
        model.close()


def test_a_frozen_child_never_blocks_a_request_larger_than_the_pipe(raising: ModelProcess) -> None:
    # A stopped process reads nothing: the write of a request bigger than a pipe's
    # buffer (64 KiB) must give up at the deadline too.
    frozen = raising.pid
    os.kill(frozen, signal.SIGSTOP)
    raising._call_timeout_s = 1.0  # this test's deadline; the default is a minute
    began = time.monotonic()
    with pytest.raises(ModelUnavailableError, match="did not answer"):
        raising.encode(["x" * 1000] * 200)
    assert time.monotonic() - began < 10
    assert _exited(frozen)
    assert raising.encode(["abc"]).tolist() == [[3.0, 1.0]]


def test_close_ends_the_child_and_refuses_further_calls(raising: ModelProcess) -> None:
    pid = raising.pid
    raising.close()
    assert _exited(pid)
    with pytest.raises(ModelUnavailableError, match="closed"):
        raising.encode(["abc"])
    raising.close()  # twice is fine


def test_the_child_ends_when_its_server_is_killed(tmp_path: Path, toy_path: None) -> None:
    # A server process that holds a model process and is then killed with SIGKILL:
    # nothing closes the pipe politely, and the child must still go.
    script = tmp_path / "holder.py"
    script.write_text(
        "import sys, time\n"
        "from recalld_server.embedding.model_process import ModelProcess\n"
        f"m = ModelProcess('{TOYS}:raising_encoder')\n"
        "print(m.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        child = int(holder.stdout.readline())
        holder.kill()
        holder.wait()
        assert _exited(child)
    finally:
        holder.kill()


async def test_two_model_processes_embed_side_by_side_and_agree() -> None:
    single = load_usem3()
    double = load_usem3(max_batch=4, processes=2)
    try:
        texts = [f"the user mentioned item number {i}" for i in range(24)]
        alone = await single.embed(texts)
        spread = await asyncio.gather(*(double.embed([t]) for t in texts))
        np.testing.assert_allclose(np.vstack(spread), alone, atol=1e-5)
    finally:
        await single.close()
        await double.close()


def test_a_model_process_that_cannot_start_stops_the_ones_that_did(
    toy_path: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recalld_server.embedding import usem

    started: list[ModelProcess] = []
    calls = itertools.count()
    real = ModelProcess

    def second_fails(loader: str) -> ModelProcess:
        if next(calls) == 1:  # the processes start on threads: one of them fails
            raise ModelUnavailableError("the second process did not start")
        started.append(real(f"{TOYS}:raising_encoder"))
        return started[-1]

    monkeypatch.setattr(usem, "ModelProcess", second_fails)
    with pytest.raises(ModelUnavailableError, match="second"):
        usem.load_usem3(processes=3)
    assert len(started) == 2 and all(_exited(model.pid) for model in started)
