"""The embedding model's process failing under a live server: degraded, then served again.

The model is the real one in its real child process; only a kill switch that makes
the child exit is added (tests/integration/embedding/toy_models.py), because nothing
else makes the real model's process die on cue.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from recalld_client import RecalldClient, RecalldError, RetryPolicy
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.embedding.model_process import ModelProcess
from recalld_server.embedding.usem import USEM3_DIMENSION, USEM3_MODEL_ID
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.helpers import memory
from tests.integration.embedding.toy_models import KILL_SWITCH_ENV

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def kill_switch(tmp_path: Path) -> Path:
    """While this file exists, the model's process exits on every call."""
    return tmp_path / "kill-the-model"


@pytest.fixture
async def fragile_server(
    monkeypatch: pytest.MonkeyPatch, kill_switch: Path
) -> AsyncIterator[RunningServer]:
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the child imports the toy loader
    monkeypatch.setenv(KILL_SWITCH_ENV, str(kill_switch))
    model = ModelProcess("tests.integration.embedding.toy_models:usem3_with_kill_switch")
    embedder = MicroBatchingEmbedder(
        model.encode, USEM3_MODEL_ID, USEM3_DIMENSION, on_close=model.close
    )
    running = await start_server(ServerConfig(port=0, storage="memory"), embedder=embedder)
    yield running
    await running.stop(grace_s=1)
    await embedder.close()


async def test_a_dying_model_fails_that_write_degrades_that_recall_and_serves_the_next(
    fragile_server: RunningServer, kill_switch: Path, tenant: str, user_id: str
) -> None:
    async with RecalldClient(
        f"127.0.0.1:{fragile_server.port}", tenant=tenant, retry=RetryPolicy(attempts=1)
    ) as client:
        await client.write(user_id, [memory("The user drinks oat milk.")])
        await asyncio.to_thread(kill_switch.touch)
        with pytest.raises(RecalldError) as failed:
            await client.write(user_id, [memory("The user lives in Lyon.")])
        assert failed.value.code is grpc.StatusCode.UNAVAILABLE
        assert failed.value.reason == "BACKEND_UNAVAILABLE"
        # A recall without the model still has keyword search, the profile and events.
        degraded = await client.recall(user_id, "oat milk")
        assert list(degraded.degraded_stages) == ["dense_search"]
        assert [item.memory.content for item in degraded.items] == ["The user drinks oat milk."]
        # Nothing of the failed write was stored; a replaced process serves at once.
        await asyncio.to_thread(kill_switch.unlink)
        recalled = await client.recall(user_id, "what milk does the user drink?")
        assert not recalled.degraded_stages
        assert [item.memory.content for item in recalled.items] == ["The user drinks oat milk."]
        written = await client.write(user_id, [memory("The user lives in Lyon.")])
        assert len(written.results) == 1
