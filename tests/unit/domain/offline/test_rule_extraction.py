"""The rule extractor: bilingual transcripts, each rule family, hedges, what yields nothing."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recalld_server.domain.core.conversation import MemoryCandidate, Message, Role
from recalld_server.domain.core.model import MemoryType
from recalld_server.domain.core.ports import Extractor
from recalld_server.domain.offline.rule_extraction import (
    CONFIDENT,
    HEDGED,
    TOPICS,
    RuleExtractor,
    extract_from_text,
    iso_date_ms,
    topic_for,
)

U, A, S, T = Role.USER, Role.ASSISTANT, Role.SYSTEM, Role.TOOL
FACT, PREFERENCE, DECISION = MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.DECISION
TASK, EVENT = MemoryType.TASK, MemoryType.EVENT


def conversation(*turns: tuple[Role, str]) -> list[Message]:
    return [
        Message(role, text, 1_800_000_000_000 + i, len(text), i + 1)
        for i, (role, text) in enumerate(turns)
    ]


def ms(iso: str) -> int:
    return int(datetime.datetime.fromisoformat(iso).replace(tzinfo=datetime.UTC).timestamp() * 1000)


ENGLISH = conversation(
    (U, "Hi! Good morning."),
    (A, "Good morning! I prefer to start with your goals. What can I do for you?"),
    (U, "I'm planning a trip. By the way, my name is Chen Jing."),
    (A, "Nice to meet you, Chen Jing. I love planning trips! Where do you live?"),
    (U, "I live in Berlin and work at Siemens."),
    (U, "I'm allergic to peanuts, so please never suggest Thai food."),
    (A, "Understood. Do you like coffee?"),
    (U, "I think I prefer tea. Do you like tea?"),
    (U, "From now on, keep your answers short."),
    (U, "We decided to use PostgreSQL 16 for the booking service."),
    (U, "Remind me to renew my passport before 2026-12-05."),
    (U, "I'm flying to Tokyo on 2026-12-20 at 09:30."),
    (U, "If I didn't like sushi I would say so. What do I like?"),
    (U, "thanks, bye!"),
)

CHINESE = conversation(
    (U, "你好呀"),
    (A, "你好！我喜欢帮助别人。有什么可以帮你的？"),
    (U, "我叫李雷，我住在杭州，在阿里巴巴工作。"),
    (A, "好的，记住了。你喜欢喝什么？"),
    (U, "我喜欢喝美式咖啡，不喜欢加糖。"),
    (U, "我好像对青霉素过敏。"),
    (U, "以后请用中文回答我。"),
    (U, "我们决定用PostgreSQL做订单库。"),
    (U, "提醒我明天下午三点给张总打电话。"),
    (U, "我下周三去上海出差。"),
    (U, "我喜欢什么？"),
    (U, "如果我不喜欢辣的话，就不点川菜了。"),
    (U, "哈哈，谢谢！"),
)

MIXED = conversation(
    (U, "hey"),
    (A, "Hi! 我可以帮你配置开发环境。"),
    (U, "我平时用Neovim写Python，偶尔用VS Code。"),
    (U, "I prefer 乌龙茶 over coffee."),
    (U, "My timezone is UTC+8, 我住在深圳。"),
    (A, "Got it. Do you prefer dark mode?"),
    (U, "maybe, 也许吧"),
    (U, "Let's go with Redis 7.2 for the cache."),
    (U, "I have a cat named Miso."),
    (U, "我对猫毛不过敏，别担心。"),
    (U, "Please answer in English from now on."),
    (U, "I need to submit PR-42 by Friday."),
    (U, "Do I use vim? 我忘了。"),
)


def summary(candidates: list[MemoryCandidate]) -> list[tuple[MemoryType, str, str]]:
    return [(c.type, c.topic_key, c.content) for c in candidates]


def test_it_is_an_extractor_named_rules() -> None:
    extractor: Extractor = RuleExtractor()
    assert extractor.name == "rules"


async def test_an_english_conversation() -> None:
    candidates = await RuleExtractor().extract(ENGLISH)
    assert summary(candidates) == [
        (FACT, "name", "The user's name is Chen Jing"),
        (FACT, "home_city", "The user lives in Berlin"),
        (FACT, "employer", "The user works at Siemens"),
        (FACT, "", "The user is allergic to peanuts"),
        (PREFERENCE, "", "The user asked: never suggest Thai food"),
        (PREFERENCE, "", "Possibly, the user prefers tea"),
        (PREFERENCE, "communication_style", "The user asked: from now on, keep your answers short"),
        (DECISION, "", "The user decided to use PostgreSQL 16 for the booking service"),
        (TASK, "", "Remind the user to renew their passport before 2026-12-05"),
        (EVENT, "", "The user is flying to Tokyo on 2026-12-20 at 09:30"),
    ]
    by_content = {c.content: c for c in candidates}
    allergy = by_content["The user is allergic to peanuts"]
    assert (allergy.confidence, allergy.importance) == (CONFIDENT, 0.9)
    assert by_content["Possibly, the user prefers tea"].confidence == HEDGED
    assert by_content["The user lives in Berlin"].importance == 0.6
    task = by_content["Remind the user to renew their passport before 2026-12-05"]
    assert (task.importance, task.occurred_at) == (0.5, ms("2026-12-05"))
    flight = by_content["The user is flying to Tokyo on 2026-12-20 at 09:30"]
    assert flight.occurred_at == ms("2026-12-20")
    assert all(c.occurred_at == 0 for c in candidates if c.type not in (TASK, EVENT))


async def test_a_chinese_conversation() -> None:
    candidates = await RuleExtractor().extract(CHINESE)
    assert summary(candidates) == [
        (FACT, "name", "用户叫李雷"),
        (FACT, "home_city", "用户住在杭州"),
        (FACT, "employer", "用户在阿里巴巴工作"),
        (PREFERENCE, "coffee", "用户喜欢喝美式咖啡，不喜欢加糖"),
        (FACT, "", "用户好像对青霉素过敏"),
        (PREFERENCE, "language", "用户要求：以后请用中文回答用户"),
        (DECISION, "", "用户决定用PostgreSQL做订单库"),
        (TASK, "", "提醒用户明天下午三点给张总打电话"),
        (EVENT, "", "用户下周三去上海出差"),
    ]
    allergy = candidates[4]
    assert (allergy.confidence, allergy.importance) == (HEDGED, 0.9)
    assert all(c.confidence == CONFIDENT for c in candidates if c is not allergy)
    assert all(c.occurred_at == 0 for c in candidates)  # no absolute date said


async def test_a_mixed_conversation() -> None:
    candidates = await RuleExtractor().extract(MIXED)
    assert summary(candidates) == [
        (FACT, "editor", "用户平时用Neovim写Python，偶尔用VS Code"),
        (PREFERENCE, "", "The user prefers 乌龙茶 over coffee"),
        (FACT, "timezone", "The user's timezone is UTC+8"),
        (FACT, "home_city", "用户住在深圳"),
        (DECISION, "", "The user decided to go with Redis 7.2 for the cache"),
        (FACT, "", "The user has a cat named Miso"),
        (PREFERENCE, "language", "The user asked: answer in English from now on"),
        (TASK, "", "The user needs to submit PR-42 by Friday"),
    ]


@pytest.mark.parametrize("transcript", [ENGLISH, CHINESE, MIXED])
async def test_the_assistant_is_never_a_source(transcript: list[Message]) -> None:
    assistant_only = [m for m in transcript if m.role is A]
    assert await RuleExtractor().extract(assistant_only) == []
    for role in (A, S, T):
        said = conversation((role, "I live in Paris. 我对芒果过敏。I prefer coffee."))
        assert await RuleExtractor().extract(said) == []


@pytest.mark.parametrize("transcript", [ENGLISH, CHINESE, MIXED])
async def test_it_is_deterministic(transcript: list[Message]) -> None:
    first = await RuleExtractor().extract(transcript)
    assert first == await RuleExtractor().extract(transcript)
    assert first == await RuleExtractor().extract(list(transcript))


PREFERENCES = [
    ("I prefer tea.", "The user prefers tea", ""),
    ("I really like sushi", "The user really likes sushi", ""),
    ("I love jazz.", "The user loves jazz", ""),
    ("I don't like coriander.", "The user does not like coriander", ""),
    ("I hate emojis in answers.", "The user hates emojis in answers", "communication_style"),
    ("I can't stand spicy food.", "The user cannot stand spicy food", ""),
    (
        "I always drink oat milk in my coffee.",
        "The user always drinks oat milk in their coffee",
        "",
    ),
    ("I never eat pork.", "The user never eats pork", "diet"),
    ("I'd rather use tabs.", "The user would rather use tabs", ""),
    (
        "My favourite coffee is a flat white.",
        "The user's favourite coffee is a flat white",
        "coffee",
    ),
    ("Always answer in English.", "The user asked: always answer in English", "language"),
    (
        "From now on, use bullet points.",
        "The user asked: from now on, use bullet points",
        "communication_style",
    ),
    ("Please stop using emojis.", "The user asked: stop using emojis", "communication_style"),
    ("我喜欢喝茶。", "用户喜欢喝茶", ""),
    ("我更喜欢拿铁", "用户更喜欢拿铁", "coffee"),
    ("我爱吃火锅！", "用户爱吃火锅", ""),
    ("我偏好简洁的回答", "用户偏好简洁的回答", "communication_style"),
    ("我不喜欢香菜", "用户不喜欢香菜", ""),
    ("我讨厌加班", "用户讨厌加班", ""),
    ("以后都用中文回答", "用户要求：以后都用中文回答", "language"),
    ("以后请叫我小陈", "用户要求：以后请叫用户小陈", ""),
    ("别再用表情了", "用户要求：别再用表情了", "communication_style"),
]


@pytest.mark.parametrize(("text", "content", "topic"), PREFERENCES)
def test_preferences(text: str, content: str, topic: str) -> None:
    (candidate,) = extract_from_text(text)
    assert (candidate.type, candidate.content, candidate.topic_key) == (PREFERENCE, content, topic)
    assert (candidate.confidence, candidate.importance) == (CONFIDENT, 0.6)


FACTS = [
    ("I live in Berlin.", "The user lives in Berlin", "home_city", 0.6),
    ("I moved to Munich last month.", "The user moved to Munich last month", "home_city", 0.6),
    (
        "I work at Siemens as an engineer.",
        "The user works at Siemens as an engineer",
        "employer",
        0.6,
    ),
    ("I'm allergic to penicillin.", "The user is allergic to penicillin", "", 0.9),
    (
        "I have a severe shellfish allergy.",
        "The user has a severe shellfish allergy",
        "",
        0.9,
    ),
    ("I'm diabetic.", "The user is diabetic", "", 0.9),
    ("My name is Chen Jing.", "The user's name is Chen Jing", "name", 0.6),
    ("Call me Jing.", "The user wants to be called Jing", "name", 0.6),
    ("I'm a nurse.", "The user is a nurse", "", 0.6),
    ("I'm vegetarian.", "The user is vegetarian", "diet", 0.6),
    ("I use Neovim on Arch Linux.", "The user uses Neovim on Arch Linux", "editor", 0.6),
    ("I speak French and German.", "The user speaks French and German", "language", 0.6),
    ("My timezone is UTC+8.", "The user's timezone is UTC+8", "timezone", 0.6),
    ("I have a dog named Rex.", "The user has a dog named Rex", "", 0.6),
    ("我住在杭州", "用户住在杭州", "home_city", 0.6),
    ("我在腾讯工作。", "用户在腾讯工作", "employer", 0.6),
    ("我对花生过敏", "用户对花生过敏", "", 0.9),
    ("我芒果过敏", "用户芒果过敏", "", 0.9),
    ("我有糖尿病", "用户有糖尿病", "", 0.9),
    ("我叫陈静", "用户叫陈静", "name", 0.6),
    ("我是程序员", "用户是程序员", "", 0.6),
    ("我吃素", "用户吃素", "diet", 0.6),
    ("我的时区是东八区", "用户的时区是东八区", "timezone", 0.6),
    ("我的猫叫咪咪", "用户的猫叫咪咪", "", 0.6),
    ("我养了一只柯基", "用户养了一只柯基", "", 0.6),
    ("我用VS Code写Go", "用户用VS Code写Go", "editor", 0.6),
    ("我会说粤语", "用户会说粤语", "language", 0.6),
]


@pytest.mark.parametrize(("text", "content", "topic", "importance"), FACTS)
def test_facts(text: str, content: str, topic: str, importance: float) -> None:
    (candidate,) = extract_from_text(text)
    assert (candidate.type, candidate.content, candidate.topic_key) == (FACT, content, topic)
    assert (candidate.confidence, candidate.importance) == (CONFIDENT, importance)


DECISIONS = [
    ("We decided to use PostgreSQL.", "The user decided to use PostgreSQL", ""),
    ("We've decided to ship on Monday.", "The user has decided to ship on Monday", ""),
    ("Let's go with Redis.", "The user decided to go with Redis", ""),
    (
        "We'll use TypeScript for the client.",
        "The user will use TypeScript for the client",
        "",
    ),
    ("We're going with option B.", "The user is going with option B", ""),
    ("我们决定用PostgreSQL", "用户决定用PostgreSQL", ""),
    ("决定用Rust重写", "用户决定用Rust重写", ""),
    ("那就用MySQL吧", "用户决定用MySQL", ""),
    ("我决定下个月换工作", "用户决定下个月换工作", ""),
]


@pytest.mark.parametrize(("text", "content", "topic"), DECISIONS)
def test_decisions(text: str, content: str, topic: str) -> None:
    (candidate,) = extract_from_text(text)
    assert (candidate.type, candidate.content, candidate.topic_key) == (DECISION, content, topic)
    assert (candidate.confidence, candidate.importance) == (CONFIDENT, 0.6)


DATED = [
    ("Remind me to call my mom tomorrow.", TASK, "Remind the user to call their mom tomorrow", 0),
    (
        "I need to submit the report by Friday.",
        TASK,
        "The user needs to submit the report by Friday",
        0,
    ),
    ("Don't forget to buy milk.", TASK, "The user needs to buy milk", 0),
    (
        "I have to renew my visa on 2026-12-05.",
        TASK,
        "The user has to renew their visa on 2026-12-05",
        ms("2026-12-05"),
    ),
    (
        "I have a dentist appointment next Monday at 10am.",
        EVENT,
        "The user has a dentist appointment next Monday at 10am",
        0,
    ),
    ("Tomorrow I'm meeting Bob.", EVENT, "The user is meeting Bob tomorrow", 0),
    (
        "Our launch is on 2026-12-05 14:30.",
        EVENT,
        "Our launch is on 2026-12-05 14:30",
        ms("2026-12-05T14:30"),
    ),
    ("The deadline is 2027-01-15.", TASK, "The deadline is 2027-01-15", ms("2027-01-15")),
    ("提醒我明天交报告", TASK, "提醒用户明天交报告", 0),
    ("我需要在周五之前提交PR-42", TASK, "用户需要在周五之前提交PR-42", 0),
    ("别忘了给妈妈打电话", TASK, "用户需要给妈妈打电话", 0),
    ("我下周三去上海出差", EVENT, "用户下周三去上海出差", 0),
    ("我明天得交报告", TASK, "用户明天得交报告", 0),
    ("2026-12-05 我去北京开会", EVENT, "用户2026-12-05去北京开会", ms("2026-12-05")),
    ("下周三我们去杭州团建", EVENT, "用户下周三去杭州团建", 0),
]


@pytest.mark.parametrize(("text", "kind", "content", "occurred_at"), DATED)
def test_tasks_and_events(text: str, kind: MemoryType, content: str, occurred_at: int) -> None:
    (candidate,) = extract_from_text(text)
    assert (candidate.type, candidate.content) == (kind, content)
    assert (candidate.topic_key, candidate.importance) == ("", 0.5)
    assert candidate.occurred_at == occurred_at


HEDGES = [
    ("I think I'm allergic to penicillin.", "Possibly, the user is allergic to penicillin"),
    ("Maybe I prefer latte.", "Possibly, the user prefers latte"),
    ("I'm probably allergic to cats.", "The user is probably allergic to cats"),
    ("I'm not sure, but I think I live in Pankow.", "Possibly, the user lives in Pankow"),
    ("Perhaps we decided to use MySQL.", "Possibly, the user decided to use MySQL"),
    ("我可能对花生过敏", "用户可能对花生过敏"),
    ("我好像更喜欢美式", "用户好像更喜欢美式"),
    ("也许我住在朝阳区", "用户可能住在朝阳区"),
    ("大概下周三我要去上海", "用户可能下周三要去上海"),
    ("我觉得我喜欢猫", "用户可能喜欢猫"),
]


@pytest.mark.parametrize(("text", "content"), HEDGES)
def test_hedges_lower_the_confidence_below_the_draft_line(text: str, content: str) -> None:
    (candidate,) = extract_from_text(text)
    assert candidate.content == content
    assert candidate.confidence == HEDGED < 0.5


NOTHING = [
    # questions
    "What do I like?",
    "do I like tea?",
    "Do I live in Berlin",
    "Where do I work?",
    "我喜欢什么？",
    "我住在哪里",
    "我是不是对花生过敏？",
    "我喜欢喝茶吗",
    # hypotheticals and denials
    "If I didn't like coffee, I'd drink tea.",
    "Suppose I lived in Paris.",
    "I wish I lived by the sea.",
    "如果我不喜欢辣的话就不点了",
    "要是我住在上海就好了",
    "假如我们决定用MySQL呢",
    "I didn't say I like coffee.",
    "我没说我喜欢咖啡",
    "I'm not allergic to anything.",
    "我对猫毛不过敏",
    # greetings and chit-chat
    "Hi there!",
    "Hello, how are you?",
    "ok thanks",
    "Thanks, that helps a lot!",
    "I love it!",
    "I like that idea.",
    "I like how you explained it.",
    "I'm good, thanks.",
    "I'm a bit tired.",
    "I have a question.",
    "I have to go now.",
    "I see.",
    "Never mind.",
    "Always!",
    "I always forget.",
    "I need to think about it.",
    "Please remind me later.",
    "Let's see.",
    "以后再说",
    "我得了感冒",
    "你好！",
    "好的，谢谢！",
    "哈哈哈",
    "我喜欢这个",
    "我爱你",
    "我得走了",
    "我今天很累",
    "我也是",
    "我是说这个不行",
    "今天天气不错",
    # other people
    "My wife likes tea.",
    "He said I like coffee.",
    "我老婆喜欢喝茶",
    "他住在北京",
    "",
    "   ",
]


@pytest.mark.parametrize("text", NOTHING)
def test_nothing_worth_keeping(text: str) -> None:
    assert extract_from_text(text) == []


def test_a_trailing_question_to_the_assistant_keeps_the_statement() -> None:
    assert summary(extract_from_text("I live in Berlin, what about you?")) == [
        (FACT, "home_city", "The user lives in Berlin")
    ]
    assert summary(extract_from_text("我住在上海，你呢？")) == [(FACT, "home_city", "用户住在上海")]
    assert summary(extract_from_text("提醒我明天开会，可以吗？")) == [
        (TASK, "", "提醒用户明天开会")
    ]


def test_one_message_gives_several_memories() -> None:
    text = (
        "By the way, I live in Lisbon and work at Farfetch; I'm allergic to shellfish, "
        "and I hate cilantro. 我喜欢茶，也喜欢咖啡。我住在杭州，在阿里巴巴工作，下周去北京出差。"
    )
    assert summary(extract_from_text(text)) == [
        (FACT, "home_city", "The user lives in Lisbon"),
        (FACT, "employer", "The user works at Farfetch"),
        (FACT, "", "The user is allergic to shellfish"),
        (PREFERENCE, "", "The user hates cilantro"),
        (PREFERENCE, "", "用户喜欢茶"),
        (PREFERENCE, "coffee", "用户也喜欢咖啡"),
        (FACT, "home_city", "用户住在杭州"),
        (FACT, "employer", "用户在阿里巴巴工作"),
        (EVENT, "", "用户下周去北京出差"),
    ]


async def test_a_repeat_across_messages_is_proposed_once() -> None:
    messages = conversation((U, "I prefer tea."), (A, "Noted."), (U, "i prefer TEA"))
    assert summary(await RuleExtractor().extract(messages)) == [
        (PREFERENCE, "", "The user prefers tea")
    ]


def test_topics_come_from_the_vocabulary() -> None:
    assert topic_for("I prefer tea over coffee") == "drink"  # the first keyword wins
    assert topic_for("I like coffee more than tea") == "coffee"
    assert topic_for("I love Chinese food") == "food"  # the longer keyword at one place
    assert topic_for("I speak Chinese") == "language"
    assert topic_for("I write JavaScript, not Java") == "programming_language"
    assert topic_for("the team meeting") == ""  # "tea" is a whole word only
    assert topic_for("我们用PostgreSQL") == "database"
    assert topic_for("我喜欢爬山") == ""
    assert {"diet", "allergy", "home_city", "employer", "coffee", "drink", "food"} <= set(TOPICS)
    assert {"language", "editor", "os", "programming_language", "database"} <= set(TOPICS)
    assert {"communication_style", "timezone", "name", "pet"} <= set(TOPICS)


async def test_every_topic_key_is_in_the_vocabulary() -> None:
    for transcript in (ENGLISH, CHINESE, MIXED):
        for candidate in await RuleExtractor().extract(transcript):
            assert candidate.topic_key in TOPICS or candidate.topic_key == ""


def test_iso_dates() -> None:
    assert iso_date_ms("on 2026-12-05") == ms("2026-12-05")
    assert iso_date_ms("at 2026-12-05T09:30") == ms("2026-12-05T09:30")
    assert iso_date_ms("2026-13-45 then 2026-02-03") == ms("2026-02-03")
    assert iso_date_ms("next Friday") == 0
    assert iso_date_ms("12026-12-05") == 0


_PIECES = st.sampled_from(
    [
        "I", "i", "I'm", "my", "we", "We decided", "let's", "remind me", "I prefer", "I like",
        "I don't like", "I live in", "I work at", "allergic to", "from now on", "always",
        "never", "maybe", "I think", "if", "?", "？", ".", "。", ",", "，", "；", "and", "but",
        "tea", "coffee", "Berlin", "PR-42", "2026-12-05", "2026-99-99", "tomorrow", "Friday",
        "我", "我们", "喜欢", "不喜欢", "住在", "杭州", "在", "工作", "过敏", "对", "花生",
        "以后", "请", "提醒我", "明天", "下周三", "决定", "用", "吧", "吗", "什么", "可能",
        "如果", "的话", "叫", "是", "的", "猫", " ", "\n", "'", "’", "😀", "\x00",
    ]
)  # fmt: skip
_TEXTS = st.one_of(st.text(max_size=200), st.lists(_PIECES, max_size=30).map(" ".join))


@settings(max_examples=500, deadline=None)
@given(texts=st.lists(_TEXTS, max_size=5), roles=st.lists(st.sampled_from(list(Role)), max_size=5))
async def test_the_extractor_never_raises_and_stays_in_bounds(
    texts: list[str], roles: list[Role]
) -> None:
    messages = [Message(role, text, 0, 0) for role, text in zip(roles, texts, strict=False)]
    candidates = await RuleExtractor().extract(messages)
    assert candidates == await RuleExtractor().extract(messages)
    if not any(m.role is U for m in messages):
        assert candidates == []
    for candidate in candidates:
        assert candidate.content.strip() and len(candidate.content) <= 8192
        assert candidate.type in (FACT, PREFERENCE, DECISION, TASK, EVENT)
        assert candidate.topic_key == "" or candidate.topic_key in TOPICS
        assert candidate.confidence in (HEDGED, CONFIDENT)
        assert candidate.importance in (0.5, 0.6, 0.9)
        assert candidate.occurred_at >= 0
