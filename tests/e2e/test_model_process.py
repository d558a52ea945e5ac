"""The embedding model's process failing under a live server: UNAVAILABLE, then served again.

The model is the real one in its real child process; only a text that makes the
child exit is added (tests/integration/embedding/toy_models.py), because nothing
else makes the real model's process die on cue.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from recalld_client import RecalldClient, RecalldError, RetryPolicy
from recalld_server.app import RunningServer, start_server
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.embedding.model_process import ModelProcess
from recalld_server.embedding.usem import USEM3_DIMENSION, USEM3_MODEL_ID
from tests.e2e.helpers import memory
from tests.integration.embedding.toy_models import KILLER_TEXT

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
async def fragile_server(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[RunningServer]:
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the child imports the toy loader
    model = ModelProcess("tests.integration.embedding.toy_models:usem3_dying_on_killer_text")
    embedder = MicroBatchingEmbedder(
        model.encode, USEM3_MODEL_ID, USEM3_DIMENSION, on_close=model.close
    )
    running = await start_server(ServerConfig(port=0, storage="memory"), embedder=embedder)
    yield running
    await running.stop(grace_s=1)
    await embedder.close()


async def test_a_dying_model_is_unavailable_for_that_call_and_serves_the_next(
    fragile_server: RunningServer, tenant: str, user_id: str
) -> None:
    async with RecalldClient(
        f"127.0.0.1:{fragile_server.port}", tenant=tenant, retry=RetryPolicy(attempts=1)
    ) as client:
        await client.write(user_id, [memory("The user drinks oat milk.")])
        for call in (
            client.write(user_id, [memory(KILLER_TEXT)]),
            client.recall(user_id, KILLER_TEXT),
        ):
            with pytest.raises(RecalldError) as failed:
                await call
            assert failed.value.code is grpc.StatusCode.UNAVAILABLE
            assert failed.value.reason == "BACKEND_UNAVAILABLE"
        # Nothing of the failed write was stored; the replaced process serves at once.
        recalled = await client.recall(user_id, "what milk does the user drink?")
        assert [item.memory.content for item in recalled.items] == ["The user drinks oat milk."]
        written = await client.write(user_id, [memory("The user lives in Lyon.")])
        assert len(written.results) == 1
