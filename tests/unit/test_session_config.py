"""Session and language-model settings; the model key comes from the environment only."""

from __future__ import annotations

import pytest

from recalld_server.config import load_config


def test_defaults_keep_summaries_and_extraction_offline() -> None:
    config = load_config([], {})
    assert config.llm_base_url == "" and config.llm_api_key == ""
    assert (config.session_window_messages, config.session_window_tokens) == (200, 8000)
    assert config.session_ttl_days == 30


def test_the_fact_judge_is_off_unless_asked_for() -> None:
    model = ["--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"]
    assert not load_config(model, {}).llm_judge
    assert load_config([*model, "--llm-judge"], {}).llm_judge
    assert load_config(model, {"RECALLD_LLM_JUDGE": "1"}).llm_judge


def test_the_relevance_judge_is_off_unless_asked_for_and_waits_briefly() -> None:
    model = ["--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"]
    assert not load_config(model, {}).llm_rerank
    config = load_config([*model, "--llm-rerank", "--llm-rerank-timeout", "1.5"], {})
    assert config.llm_rerank and config.llm_rerank_timeout_s == 1.5
    assert load_config(model, {"RECALLD_LLM_RERANK": "yes"}).llm_rerank
    # A recall waits seconds for a verdict, not the summaries' half minute.
    assert load_config(model, {}).llm_rerank_timeout_s <= 5


def test_the_llm_key_comes_from_the_environment_and_never_shows() -> None:
    environ = {"RECALLD_LLM_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-secret"}
    config = load_config(["--llm-model", "qwen2.5-7b"], environ)
    assert config.llm_api_key == "sk-secret" and config.llm_model == "qwen2.5-7b"
    assert "sk-secret" not in repr(config)
    preferred = load_config(["--llm-model", "m"], {**environ, "RECALLD_LLM_API_KEY": "sk-recalld"})
    assert preferred.llm_api_key == "sk-recalld"
    with pytest.raises(SystemExit):
        load_config(["--llm-api-key", "sk-in-argv"], {})


@pytest.mark.parametrize(
    "argv",
    [
        ["--llm-base-url", "http://127.0.0.1:9/v1"],  # no model
        ["--llm-base-url", "ftp://example/v1", "--llm-model", "m"],
        ["--session-window-messages", "1"],
        ["--session-window-tokens", "10"],
        ["--session-ttl-days", "-1"],
        ["--llm-timeout", "0"],
        ["--llm-judge"],  # a judge needs a model to ask
        ["--llm-rerank"],
        ["--llm-rerank-timeout", "0"],
    ],
)
def test_unusable_session_settings_stop_start_up(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        load_config(argv, {})
