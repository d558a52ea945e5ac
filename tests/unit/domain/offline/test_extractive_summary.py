"""The extractive summarizer: bilingual transcripts, budgets, identifiers, filler, determinism."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recalld_server.domain.core.conversation import Message, Role
from recalld_server.domain.core.ports import Summarizer
from recalld_server.domain.core.text import estimate_tokens, token_weight
from recalld_server.domain.offline.extractive_summary import (
    IDENTIFIER,
    ExtractiveSummarizer,
    cut_to_budget,
    split_sentences,
    summarize,
    truncate,
)

U, A, S, T = Role.USER, Role.ASSISTANT, Role.SYSTEM, Role.TOOL


def conversation(*turns: tuple[Role, str]) -> list[Message]:
    return [
        Message(role, text, 1_800_000_000_000 + i, estimate_tokens(text) + 3, i + 1)
        for i, (role, text) in enumerate(turns)
    ]


ENGLISH = conversation(
    (U, "Hi there!"),
    (A, "Hello! How can I help you today?"),
    (U, "My order SO-88231 hasn't arrived yet. I ordered it on 2026-11-20."),
    (A, "Sorry to hear that. Let me check the tracking for SO-88231."),
    (T, "tracking: SO-88231 carrier=DHL status=in_transit eta=2026-12-02"),
    (A, "It is in transit with DHL and should arrive by 2026-12-02."),
    (U, "ok"),
    (U, "Also, I prefer email updates, please send them to chen.jing@example.com."),
    (A, "Sure, I will send updates to chen.jing@example.com."),
    (U, "thanks"),
    (U, "From now on, please keep your answers short."),
    (A, "Understood. I'll keep answers short."),
    (U, "We decided to open PR-42 for the refund; see https://git.example.com/shop/pull/42."),
    (A, "Great, PR-42 it is."),
)

CHINESE = conversation(
    (U, "你好"),
    (A, "你好！有什么可以帮你？"),
    (U, "我住在杭州，在一家电商公司做后端开发。"),
    (A, "好的，了解了。"),
    (U, "我对花生过敏，以后推荐餐厅的时候请注意。"),
    (A, "明白，我会避开含花生的菜品。"),
    (U, "好的，谢谢！"),
    (U, "我们决定用PostgreSQL做订单库，预算是五千元。"),
    (A, "收到，PostgreSQL 是个不错的选择。"),
    (U, "订单号是SO-77120，下周三之前要上线。"),
    (A, "好的，SO-77120 下周三上线，我记下了。"),
    (U, "嗯嗯"),
)

MIXED = conversation(
    (U, "hey"),
    (A, "Hi! What's up?"),
    (U, "我平时用Neovim写Python，偶尔用VS Code。"),
    (A, "Nice setup. Any plugins you rely on?"),
    (U, "Mostly telescope.nvim and the LSP. 我比较喜欢简洁的回答。"),
    (A, "Got it, I'll keep it concise."),
    (U, "Remind me to renew the domain example.org before 12/15."),
    (A, "好的，我会在12月15日之前提醒你续费 example.org。"),
    (S, "The assistant may call tools."),
    (U, "Let's go with Redis 7.2 for the cache, 我们已经决定了。"),
    (A, "OK, Redis 7.2 for the cache."),
    (U, "thx"),
)

SUPPORT = conversation(
    (S, "You are the billing assistant of ACME Cloud."),
    (U, "Hello, I have a billing question about invoice INV-2026-0042."),
    (A, "Of course. What seems to be the problem with INV-2026-0042?"),
    (U, "I was charged $1,249.50 but my plan is the $999 Team plan."),
    (T, "billing.lookup(INV-2026-0042) -> amount=1249.50 plan=team seats=12 overage=250.50"),
    (A, "The extra $250.50 is an overage for 12 seats; the Team plan includes 10."),
    (U, "I see. We only need 10 seats, please remove two: bob@acme.io and eve@acme.io."),
    (A, "Done: bob@acme.io and eve@acme.io are removed from the next cycle."),
    (U, "cool, thanks"),
    (U, "My account manager is Dana Whitfield, by the way."),
    (A, "Noted. Anything else?"),
    (U, "no, that's all"),
)

TRANSCRIPTS = {"english": ENGLISH, "chinese": CHINESE, "mixed": MIXED, "support": SUPPORT}
FILLER = {"Hi there!", "ok", "thanks", "你好", "好的，谢谢！", "嗯嗯", "hey", "thx", "cool, thanks"}


def lines(summary: str) -> list[str]:
    return summary.splitlines()


def bodies(summary: str) -> list[str]:
    return [line.split(": ", 1)[1] for line in lines(summary)]


def test_it_is_a_summarizer_named_extractive() -> None:
    summarizer: Summarizer = ExtractiveSummarizer()
    assert summarizer.name == "extractive"


@pytest.mark.parametrize("name", TRANSCRIPTS)
@pytest.mark.parametrize("budget", [1, 5, 12, 25, 40, 80, 150, 1000])
async def test_the_summary_fits_the_budget(name: str, budget: int) -> None:
    summary = await ExtractiveSummarizer().fold("", TRANSCRIPTS[name], budget)
    assert estimate_tokens(summary) <= budget
    if budget >= 40:
        assert summary  # there is always something worth keeping at 40 tokens


@pytest.mark.parametrize("name", TRANSCRIPTS)
async def test_a_large_budget_keeps_every_sentence_that_says_something(name: str) -> None:
    messages = TRANSCRIPTS[name]
    summary = await ExtractiveSummarizer().fold("", messages, 10_000)
    kept = " ".join(bodies(summary))
    for message in messages:
        if message.content in FILLER:
            continue
        if message.role is U:  # every user statement survives whole
            for sentence in split_sentences(message.content):
                assert sentence in kept, sentence


@pytest.mark.parametrize("name", TRANSCRIPTS)
async def test_filler_is_dropped_whatever_the_budget(name: str) -> None:
    summary = await ExtractiveSummarizer().fold("", TRANSCRIPTS[name], 10_000)
    for body in bodies(summary):
        assert body not in FILLER
    assert "user: ok" not in lines(summary) and "user: thanks" not in lines(summary)
    assert not any(line.endswith(("嗯嗯", ": hey", ": thx")) for line in lines(summary))


@pytest.mark.parametrize("name", TRANSCRIPTS)
@pytest.mark.parametrize("budget", [12, 40, 80, 10_000])
async def test_identifiers_and_numbers_are_never_cut(name: str, budget: int) -> None:
    messages = TRANSCRIPTS[name]
    summary = await ExtractiveSummarizer().fold("", messages, budget)
    source = "\n".join(m.content for m in messages)
    whole = set(IDENTIFIER.findall(source))
    for identifier in IDENTIFIER.findall(summary):
        assert identifier in whole, (identifier, summary)
    for number in re.findall(r"\d+(?:[.,]\d+)*", summary):
        assert re.search(rf"(?<![\d.,]){re.escape(number)}(?![\d])", source), number


async def test_identifiers_win_a_small_budget() -> None:
    summarizer = ExtractiveSummarizer()
    english = await summarizer.fold("", ENGLISH, 40)
    assert "PR-42" in english and "https://git.example.com/shop/pull/42" in english
    chinese = await summarizer.fold("", CHINESE, 80)
    assert "SO-77120" in chinese and "五千元" in chinese and "花生过敏" in chinese
    support = await summarizer.fold("", SUPPORT, 60)
    assert "INV-2026-0042" in support or "$1,249.50" in support
    assert "You are the billing assistant" not in support


async def test_lines_keep_the_transcript_order_and_name_the_speaker() -> None:
    summary = await ExtractiveSummarizer().fold("", ENGLISH, 10_000)
    positions = []
    for line in lines(summary):
        role, body = line.split(": ", 1)
        assert role in {"user", "assistant", "tool", "system"}
        first = split_sentences(body)[0]
        index = next(i for i, m in enumerate(ENGLISH) if first in m.content)
        assert ENGLISH[index].role.name.lower() == role
        positions.append(index)
    assert positions == sorted(positions)
    assert "tool: tracking: SO-88231 carrier=DHL status=in_transit eta=2026-12-02" in summary


async def test_the_user_outranks_the_assistant() -> None:
    messages = conversation(
        (A, "The invoice INV-3311 is due on 2026-12-09."),
        (U, "The invoice INV-2211 is due on 2026-12-01."),
    )
    room = estimate_tokens("user: The invoice INV-2211 is due on 2026-12-01.") + 2
    assert await ExtractiveSummarizer().fold("", messages, room) == (
        "user: The invoice INV-2211 is due on 2026-12-01."
    )


async def test_tool_and_system_chatter_without_figures_is_dropped() -> None:
    messages = conversation(
        (S, "You are a helpful assistant."),
        (T, "The search returned several results."),
        (A, "Anything else I can help with?"),
        (U, "I prefer aisle seats on long flights."),
    )
    summary = await ExtractiveSummarizer().fold("", messages, 10_000)
    assert summary == "user: I prefer aisle seats on long flights."


async def test_it_is_deterministic() -> None:
    summarizer = ExtractiveSummarizer()
    for messages in TRANSCRIPTS.values():
        for budget in (20, 60, 200):
            previous = "user: The user's name is Chen."
            first = await summarizer.fold(previous, messages, budget)
            assert first == await summarizer.fold(previous, messages, budget)
            assert first == await ExtractiveSummarizer().fold(previous, list(messages), budget)


async def test_a_sentence_too_long_is_cut_at_a_word_boundary() -> None:
    words = [f"word{i}" for i in range(400)]
    text = "Ticket SO-12345 was escalated because " + " ".join(words)
    summary = await ExtractiveSummarizer().fold("", conversation((U, text)), 50)
    assert summary.startswith("user: Ticket SO-12345 was escalated because word0")
    assert summary.endswith("…") and estimate_tokens(summary) <= 50
    kept = summary.removeprefix("user: ").removesuffix("…").split()
    assert kept == text.split()[: len(kept)]  # whole words only


async def test_a_long_chinese_sentence_is_cut_between_characters() -> None:
    text = "订单SO-88231的物流信息" + "一直没有更新" * 60 + "。"
    summary = await ExtractiveSummarizer().fold("", conversation((U, text)), 30)
    assert summary.startswith("user: 订单SO-88231的物流信息") and summary.endswith("…")
    assert estimate_tokens(summary) <= 30
    assert text.startswith(summary.removeprefix("user: ").removesuffix("…"))


async def test_the_previous_summary_competes_and_keeps_its_figures() -> None:
    summarizer = ExtractiveSummarizer()
    first = await summarizer.fold("", ENGLISH[:7], 60)
    assert "SO-88231" in first
    second = await summarizer.fold(first, CHINESE, 90)
    assert estimate_tokens(second) <= 90
    # Old lines come first, with their speakers; the old plain sentences gave way.
    assert lines(second)[0] in {
        "user: My order SO-88231 hasn't arrived yet.",
        "user: I ordered it on 2026-11-20.",
    }
    assert "Sorry to hear that." not in second
    assert "SO-77120" in second and "五千元" in second


async def test_a_summary_from_elsewhere_is_read_as_plain_lines() -> None:
    previous = "The user lives in Hangzhou and works on order SO-1024.\nThey like green tea."
    summary = await ExtractiveSummarizer().fold(previous, conversation((U, "ok")), 200)
    assert summary == previous  # no speaker prefix to add; the filler added nothing


async def test_repeated_sentences_are_kept_once() -> None:
    messages = conversation((U, "My order is SO-55555."), (A, "OK."), (U, "My order is SO-55555."))
    assert await ExtractiveSummarizer().fold("", messages, 200) == "user: My order is SO-55555."


async def test_nothing_fits_in_no_budget() -> None:
    summarizer = ExtractiveSummarizer()
    assert await summarizer.fold("user: I like tea.", ENGLISH, 0) == ""
    assert await summarizer.fold("user: I like tea.", ENGLISH, -5) == ""
    assert await summarizer.fold("", [], 100) == ""


async def test_repeated_folds_stay_in_budget() -> None:
    summarizer = ExtractiveSummarizer()
    summary = ""
    history = ENGLISH + CHINESE + MIXED + SUPPORT
    for start in range(0, len(history), 4):
        summary = await summarizer.fold(summary, history[start : start + 4], 70)
        assert estimate_tokens(summary) <= 70
        assert all(
            line.split(": ", 1)[0] in {"user", "assistant", "tool"} for line in lines(summary)
        )
    assert "INV-2026-0042" in summary  # the newest transcript's figures made it in


async def test_new_material_finds_room_next_to_a_full_summary() -> None:
    previous = "\n".join(
        f"user: Order SO-{10000 + i} ships on 2026-12-{i + 1:02d} to ops{i}@example.com."
        for i in range(12)
    )
    assert estimate_tokens(previous) > 100
    new = conversation((U, "I prefer tea over coffee."), (U, "我们决定用Redis。"))
    summary = await ExtractiveSummarizer().fold(previous, new, 100)
    assert estimate_tokens(summary) <= 100
    assert summary.endswith("user: I prefer tea over coffee.\nuser: 我们决定用Redis。")
    assert summary.startswith("user: Order SO-")  # the old figures keep the rest


def test_sentences_split_in_both_languages() -> None:
    text = (
        "我喜欢茶。订单SO-88231已发货！真的吗？好；Dr. Li said e.g. this works. "
        "Version 3.5 ships on 2026-12-05! Write to a.b@example.com.\nNext line"
    )
    assert split_sentences(text) == [
        "我喜欢茶。",
        "订单SO-88231已发货！",
        "真的吗？",
        "好；",
        "Dr. Li said e.g. this works.",
        "Version 3.5 ships on 2026-12-05!",
        "Write to a.b@example.com.",
        "Next line",
    ]
    assert split_sentences("He said “好的。”然后走了") == ["He said “好的。”", "然后走了"]
    assert split_sentences("  \n ") == []


def test_truncate_and_cut_respect_the_weight() -> None:
    assert truncate("short", 10) == "short"
    cut = truncate("alpha beta gamma delta epsilon", 4)
    assert cut == "alpha beta…" and token_weight(cut) <= 4
    assert truncate("SO-88231", 2) == ""  # never half an identifier
    text = "The user lives in Berlin. The user prefers tea. The order is SO-1."
    assert cut_to_budget(text, 100) == text
    assert cut_to_budget(text, 13) == "The user lives in Berlin. The user prefers tea."
    assert cut_to_budget(text, 12) == "The user lives in Berlin."
    assert cut_to_budget(text, 3).endswith("…")
    assert cut_to_budget(text, 0) == ""


_ALPHABET = st.sampled_from(
    list("abcxyzABC0123456789 .,!?;:-_/@#%'\"\n\t")
    + list("我你他的是了在有不人这中大为上个国。，！？；：、…“”「」")
    + ["SO-88231", "PR-42", "2026-12-05", "https://x.io/a", "e.g.", "ok", "谢谢", "好的"]
)
_TEXT = st.lists(_ALPHABET, max_size=60).map("".join)
_MESSAGES = st.lists(
    st.tuples(st.sampled_from(list(Role)), _TEXT).map(
        lambda turn: Message(turn[0], turn[1], 0, estimate_tokens(turn[1]))
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(
    previous=st.one_of(st.just(""), _TEXT, _TEXT.map(lambda t: "user: " + t)),
    messages=_MESSAGES,
    budget=st.integers(min_value=-2, max_value=160),
)
def test_the_summary_never_exceeds_the_budget(
    previous: str, messages: list[Message], budget: int
) -> None:
    summary = summarize(previous, messages, budget)
    assert estimate_tokens(summary) <= max(budget, 0)
    assert summary == summarize(previous, messages, budget)
    # Every identifier the summary holds is one the input held.
    source = previous + "\n" + "\n".join(m.content for m in messages)
    for identifier in re.findall(r"SO-88231|PR-42|2026-12-05", summary):
        assert identifier in source


@settings(max_examples=200, deadline=None)
@given(text=_TEXT, budget=st.integers(min_value=0, max_value=60))
def test_cut_to_budget_never_exceeds_it(text: str, budget: int) -> None:
    cut = cut_to_budget(text, budget)
    assert estimate_tokens(cut) <= budget
    assert text.strip().startswith(cut.removesuffix("…").rstrip()) or cut.endswith("…")
