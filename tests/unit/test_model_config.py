"""How many processes the embedding model runs in: one unless a flag or the environment says."""

from __future__ import annotations

import pytest

from recalld_server.config import load_config


def test_one_model_process_unless_asked_for_more() -> None:
    assert load_config([], {}).model_processes == 1
    assert load_config(["--model-processes", "3"], {}).model_processes == 3
    assert load_config([], {"RECALLD_MODEL_PROCESSES": "2"}).model_processes == 2


@pytest.mark.parametrize(
    "argv", [["--model-processes", "0"], ["--model-processes", "17"], ["--embed-batch", "0"]]
)
def test_impossible_model_settings_stop_the_start_with_a_message(argv: list[str]) -> None:
    with pytest.raises(SystemExit, match=r"--model-processes must be 1\.\.16"):
        load_config(argv, {})
