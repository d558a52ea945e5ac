"""The learned password scorer: which words it looks at, what it sees, and the shipped weights."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recalld_server.calibration.dataset import load_precision
from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.detection import Detector
from recalld_server.domain.sensitive.password_model import (
    FOUND,
    PasswordModel,
    candidates,
    features,
    neutralized,
    shipped_password_model,
)
from recalld_server.domain.sensitive.spans import Detection

ROOT = Path(__file__).parents[4]
SHIPPED = ROOT / "server/recalld_server/domain/sensitive/password_model.json"


def words(text: str) -> list[str]:
    return [text[start:end] for start, end in candidates(text)]


def test_looks_only_at_words_a_password_could_be() -> None:
    text = "Wi-Fi at the cabin: Pinecone-77, see https://example.com/x or ana@example.com"
    assert words(text) == ["Wi-Fi", "Pinecone-77"]
    assert words("the Garden is OPEN today") == []  # plain words, any case
    assert words("e.code === Code.NotFound") == []  # code identifiers
    assert words("开机要输 Yinuo0905，别告诉别人") == ["Yinuo0905"]
    assert words("door: #4410*.") == ["4410*"]


def test_a_word_with_an_at_sign_is_a_candidate_unless_it_is_an_e_mail_address() -> None:
    assert words("婉清说是 Rt@Bristol88，别外传") == ["Rt@Bristol88"]
    assert words("login tianyou@mail9 then") == ["tianyou@mail9"]
    assert words("write to ops@clinic.example.org or Ops@Example.COM") == []


def test_a_plain_word_is_a_candidate_only_right_after_a_word_for_a_password() -> None:
    assert words("设的 Netflix password puffinseason") == ["puffinseason"]
    assert words("the van's Wi-Fi is pasteisdenata") == ["Wi-Fi", "pasteisdenata"]
    assert words("密码 hongshaorou，别外传") == ["hongshaorou"]
    assert words("the password manager keeps them") == ["manager"]  # the model tells it apart
    assert words("a puffin season at the lighthouse") == []
    assert words("password is fine") == []  # shorter than six letters


def test_a_cue_word_counts_for_its_kind_even_where_no_split_used_it() -> None:
    # "deadbolt" is in no labelled split; it still reads as a lock.
    text = "the deadbolt takes 4471"
    seen = features(text, text.index("4471"), len(text))
    assert {"cue_before:lock|near", "cue_before+kind:lock|D", "cue_before+kind:lock|D4"} <= seen
    text = "把儿童锁改成 Qx-7781 了"
    seen = features(text, text.index("Qx"), text.index("Qx") + 7)
    assert {"cue_before:change|near", "cue_before:lock|near"} <= seen
    text = "4471 is the code"
    assert "cue_after:secret" in features(text, 0, 4)


def test_sees_found_values_and_placeholders_as_one_mark_and_maps_back() -> None:
    text = "密码 [PASSWORD] then 147258 and Abc-123"
    seen, origin = neutralized(text, [(text.index("147258"), text.index("147258") + 6)])
    assert seen == f"密码 {FOUND} then {FOUND} and Abc-123"
    start = seen.index("Abc-123")
    assert text[origin[start] : origin[start + 6] + 1] == "Abc-123"
    assert origin[len(seen)] == len(text)


def toy_model(threshold: float = 0.5) -> PasswordModel:
    # Hand-set weights: "a word after 'gate' is a password", nothing else is.
    return PasswordModel({"word-1:gate": 4.0}, bias=-2.0, threshold=threshold)


def test_reports_what_scores_at_or_above_the_threshold_where_it_is_in_the_text() -> None:
    text = "the gate 4410B, the shed 7781C"
    found = list(toy_model().passwords(text, []))
    assert found == [Detection(Category.PASSWORD, text.index("4410B"), text.index("4410B") + 5)]
    assert list(toy_model(threshold=0.9).passwords(text, [])) == []


def test_leaves_alone_what_the_rules_took_and_what_is_already_masked() -> None:
    text = "the gate 4410B"
    taken = [Detection(Category.CARD_NUMBER, 9, 14)]
    assert list(toy_model().passwords(text, taken)) == []
    assert list(toy_model().passwords("the gate [PASSWORD]", [])) == []


def test_a_word_its_found_neighbour_lifts_is_found_too() -> None:
    # Right after a found value scores too: the second code is found once the first is.
    model = PasswordModel({"word-1:gate": 4.0, f"word-1:{FOUND}": 4.0}, bias=-2.0)
    text = "the gate 4410B 7781C"
    assert [text[d.start : d.end] for d in model.passwords(text, [])] == ["4410B", "7781C"]


@given(st.text(alphabet="ab1!- :密码gate[]PASSWORD", max_size=40))
def test_masking_twice_finds_nothing_new(text: str) -> None:
    detector = Detector(PasswordModel({"word-1:gate": 4.0, f"word-1:{FOUND}": 4.0}, bias=-2.0))
    once = text
    for detection in reversed(detector.find(text)):
        once = once[: detection.start] + "[PASSWORD]" + once[detection.end :]
    assert [d for d in detector.find(once) if d.category is Category.PASSWORD] == []


def test_the_shipped_model_is_read_once_and_used_by_default() -> None:
    assert shipped_password_model() is shipped_password_model()
    # No rule reads "wake it with" as giving a password; the shipped model does.
    text = "the kids' tablet goes to sleep, wake it with Pebble#2020"
    assert [(d.category, text[d.start : d.end]) for d in Detector().find(text)] == [
        (Category.PASSWORD, "Pebble#2020")
    ]
    assert Detector(password_model=None).find(text) == []


def test_the_shipped_model_leaves_every_ordinary_memory_alone() -> None:
    # The 821 memories of the precision set: facts, preferences and events as agents
    # write them, with dates, prices, versions and counts and no secret.
    model = shipped_password_model()
    users, _ = load_precision()
    memories = [memory["content"] for listed in users.values() for memory in listed]
    assert len(memories) > 800
    flagged = [text for text in memories if list(model.passwords(text, []))]
    assert flagged == []


@pytest.mark.timeout(120)
def test_the_shipped_weights_are_what_the_training_script_makes() -> None:
    spec = importlib.util.spec_from_file_location(
        "train_password_model", ROOT / "benchmarks/masking/train_password_model.py"
    )
    assert spec is not None and spec.loader is not None
    trainer = importlib.util.module_from_spec(spec)
    sys.modules["train_password_model"] = trainer
    spec.loader.exec_module(trainer)
    shipped = json.loads(SHIPPED.read_text(encoding="utf-8"))
    weights, bias = trainer.fit(*trainer.examples(shipped["trained_on"]))
    # Rounded to four places; a last-digit difference between machines is not staleness.
    ours = shipped["weights"]
    for feature in set(weights) | set(ours):
        assert abs(weights.get(feature, 0.0) - ours.get(feature, 0.0)) < 2e-3, feature
    assert abs(bias - shipped["bias"]) < 1e-3
