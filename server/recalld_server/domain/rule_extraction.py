"""The rule extractor: memories from what a user said, without a model.

Deterministic, Chinese and English. Only USER messages are read. Each message is
split into sentences and clauses (at ；; and at commas or "and"/"but" that start
a new statement: ", I ...", "，我...", "，也..."; a clause without a subject takes
the previous clause's, so "我住在杭州，在阿里巴巴工作" gives two facts), and each
clause is matched against the rules below, first match wins. Leading discourse
markers (by the way, 对了, 另外, remember that, 记住...) are skipped.

| Rule | Type | Importance | Chinese example | English example |
| --- | --- | --- | --- | --- |
| allergy, medical | FACT | 0.9 | 我对花生过敏 | I'm allergic to peanuts |
| name | FACT | 0.6 | 我叫陈静 | My name is Chen Jing |
| home | FACT | 0.6 | 我住在杭州 | I live in Berlin |
| employer | FACT | 0.6 | 我在阿里巴巴工作 | I work at Siemens |
| diet | FACT | 0.6 | 我吃素 | I'm vegetarian |
| preference | PREFERENCE | 0.6 | 我更喜欢美式 | I prefer tea |
| instruction | PREFERENCE | 0.6 | 以后都用中文回答 | From now on, answer in English |
| other facts | FACT | 0.6 | 我是程序员, 我的猫叫咪咪 | I'm a nurse, my timezone is UTC+8 |
| decision | DECISION | 0.6 | 我们决定用PostgreSQL | We decided to use PostgreSQL |
| task | TASK | 0.5 | 提醒我明天交报告 | Remind me to call Bob |
| event | EVENT | 0.5 | 我下周三去上海出差 | I'm flying to Tokyo on 2026-12-05 |

The cues of each rule, anchored at the start of the clause:

- allergy, medical: 我(…)对…过敏, 我…过敏, 我有糖尿病/哮喘…; I'm allergic to, I have a
  … allergy, I'm diabetic/celiac, I have diabetes/asthma.
- name: 我叫, 我的名字是, 叫我; my name is, call me, I go by.
- home: 我住在, 我家在, 我搬到; I live in, I'm based in, I moved to.
- employer: 我在…工作/上班/任职; I work at/for, I'm working/employed at.
- diet: 我吃素, 我是素食主义者; I'm (a) vegetarian/vegan/pescatarian/lactose intolerant….
- preference: 我(也/很/最/不…)喜欢/爱/偏好/更喜欢/偏爱/讨厌/受不了/习惯/希望你,
  我不吃/不喝/只喝; I (really…) prefer/like/love/enjoy/hate/dislike/don't like/can't
  stand, I'd prefer/rather, I always/never/usually/only …, I'm a (big) fan of, my
  favourite … is.
- instruction: 以后都/以后请/以后别/今后/从现在开始/每次都/一律/永远/别再/不要再; from
  now on, going forward, in the future, always …, never …, please always/never, stop
  …ing, no more.
- other facts: 我是…, 我的…是/叫/在…, 我养了…, 我有一只(猫/狗), 我会说(语言),
  我用(with a topic); I am a/an …, I'm from …, my … is …, I have a (pet), I speak
  (a language), I use (with a topic), I'm in the … time zone.
- decision: 我们/咱们决定/定了/选择/就用/改用/用, 我决定, 决定用, 那就用…吧; we
  decided/agreed/chose/settled on, we'll use, we're going with, let's go with/use/
  switch to, I decided, "Decision: …".
- task: 提醒我, 我需要/我得/我必须/我要记得, 别忘了/记得; remind me, I need to, I have
  to, I must, I've got to, don't forget to, remember to.
- event: a date (今天, 明天, 下周, 周三, 12月5日, 2026-12-05, 3点…) with 我/我们 or an event
  word (开会, 面试, 航班, 出差…); a date (today, tomorrow, next Monday, on Friday, Dec
  5, 2026-12-05, at 3pm…) with I/we/my or an event word (meeting, flight,
  appointment…). With a deadline word (需要, 截止, 提交; need to, due, by Friday,
  submit) it is a TASK.

`occurred_at` of a task or event is the absolute ISO date (2026-12-05, with
an optional HH:MM, UTC) when the clause holds one, else 0.

Nothing is extracted from a clause that is a question (ends with ?/？, starts
with do/does/can/what/..., ends with 吗/呢, or asks 什么/哪/谁/怎么/多少...),
a hypothetical (如果/要是/假如/假设/万一/…的话, if/suppose/imagine/unless/wish),
reported denial (我没说/didn't say), approval of "it/this/that" (I love it, 我喜欢这个),
a greeting or chit-chat (nothing matches). A trailing "，你呢？" / ", what about you?"
is dropped and the statement before it kept.

Hedges (可能/也许/大概/好像/似乎/估计/或许/说不定/我觉得/不确定, maybe/perhaps/
probably/possibly/I think/I guess/I believe/not sure/might/kind of) give
confidence 0.4 (the write rules keep memories under 0.5 as drafts); otherwise 0.9.

Content is a third-person sentence where the rewrite is simple ("I prefer tea"
-> "The user prefers tea"; "我住在杭州" -> "用户住在杭州"; "we decided to use X" ->
"The user decided to use X"; instructions -> "The user asked: ..." / "用户要求：..."),
with "Possibly, " / 可能 when a leading hedge was removed; otherwise the clause
verbatim. Topic keys come from TOPICS (see `topic_for`) except the MULTI_VALUED
ones; tasks and events get none.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Sequence

from recalld_server.domain.conversation import MemoryCandidate, Message, Role
from recalld_server.domain.extractive_summary import split_sentences
from recalld_server.domain.model import MemoryType
from recalld_server.domain.text import normalise
from recalld_server.domain.validation import MAX_CONTENT_CHARS

CONFIDENT = 0.9
HEDGED = 0.4
IMPORTANCE_CORE = 0.9
"""Allergies and medical conditions: what must never be forgotten."""
IMPORTANCE_PROFILE = 0.6
"""Preferences, facts and decisions."""
IMPORTANCE_TASK = 0.5
"""Tasks and events."""
MAX_CLAUSE_CHARS = 1000
"""Longer clauses are not the short statements the rules are written for."""

TOPICS: dict[str, tuple[str, ...]] = {
    "name": ("my name", "call me", "我叫", "名字"),
    "home_city": ("live in", "based in", "moved to", "住在", "家在", "搬到"),
    "employer": ("work at", "work for", "employer", "在公司", "上班", "任职"),
    "allergy": ("allergic", "allergy", "allergies", "过敏"),
    "diet": (
        "vegetarian", "vegan", "pescatarian", "halal", "kosher", "keto", "gluten", "lactose",
        "pork", "meat", "素食", "吃素", "纯素", "清真", "忌口", "猪肉", "乳糖", "无麸质", "生酮",
    ),
    "coffee": (
        "coffee", "latte", "espresso", "americano", "cappuccino", "flat white", "mocha",
        "咖啡", "拿铁", "美式", "卡布奇诺", "摩卡", "浓缩",
    ),
    "drink": (
        "tea", "green tea", "black tea", "juice", "milk", "oat milk", "beer", "wine", "soda",
        "cola", "sparkling water", "茶", "奶茶", "果汁", "牛奶", "燕麦奶", "啤酒", "红酒",
        "葡萄酒", "可乐", "白酒", "饮料",
    ),
    "food": (
        "food", "cuisine", "chinese food", "sushi", "pizza", "pasta", "noodles", "ramen",
        "spicy", "cilantro", "coriander", "seafood", "chocolate", "dessert", "burger", "salad",
        "steak", "dumplings", "hot pot", "hotpot", "辣", "火锅", "寿司", "面条", "拉面",
        "饺子", "香菜", "川菜", "粤菜", "湘菜", "中餐", "西餐", "甜食", "海鲜", "披萨",
        "牛排", "米饭", "甜点",
    ),
    "language": (
        "english", "chinese", "mandarin", "cantonese", "japanese", "korean", "french",
        "german", "spanish", "中文", "汉语", "普通话", "粤语", "英文", "英语", "日语",
        "韩语", "法语", "德语", "西班牙语",
    ),
    "editor": (
        "vim", "neovim", "nvim", "emacs", "vs code", "vscode", "visual studio code", "sublime",
        "intellij", "pycharm", "webstorm", "helix", "编辑器",
    ),
    "os": (
        "linux", "macos", "mac", "windows", "ubuntu", "debian", "fedora", "arch linux",
        "nixos", "操作系统",
    ),
    "programming_language": (
        "python", "rust", "golang", "typescript", "javascript", "java", "kotlin", "swift",
        "ruby", "haskell", "c++", "c#", "scala", "elixir", "php", "编程语言",
    ),
    "database": (
        "postgres", "postgresql", "mysql", "sqlite", "mongodb", "redis", "milvus", "cassandra",
        "dynamodb", "clickhouse", "elasticsearch", "数据库",
    ),
    "communication_style": (
        "concise", "brief", "succinct", "short", "shorter", "detailed", "verbose",
        "bullet points", "bullet", "formal", "casual", "tone", "emoji", "emojis",
        "简洁", "简短", "详细", "啰嗦", "语气", "正式", "口语化", "表情", "分点", "列表",
    ),
    "timezone": (
        "timezone", "time zone", "utc", "gmt", "pst", "pdt", "est", "edt", "cet", "jst",
        "时区", "北京时间", "东八区",
    ),
    "pet": (
        "dog", "cat", "puppy", "kitten", "pet", "parrot", "hamster", "rabbit",
        "狗", "猫", "宠物", "兔子", "仓鼠", "鹦鹉",
    ),
}  # fmt: skip
"""The topic vocabulary: topic key -> keywords (lower case; Latin ones match whole words).

A topic key is a slot: a newer memory with the same key supersedes the older one
(docs/lifecycle.md), so "I now prefer americano" replaces "I prefer latte".
"""

MULTI_VALUED = frozenset({"allergy", "food", "drink", "pet", "programming_language", "database"})
"""Topics a user has many of at once (two allergies, several pets): recognised, so the
rules can tell a fact from chatter, but never used as a memory's topic key, which is a
slot that keeps one memory ("I'm also allergic to shellfish" must not replace peanuts)."""

_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _keyword_pattern(word: str) -> str:
    if _CJK.search(word):
        return re.escape(word)
    return rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_+#])"


_TOPIC_MATCHERS: list[tuple[str, re.Pattern[str]]] = [
    (topic, re.compile("|".join(_keyword_pattern(w) for w in words), re.IGNORECASE))
    for topic, words in TOPICS.items()
]


def topic_for(text: str) -> str:
    """The vocabulary topic whose keyword appears first in the text ("" if none).

    Between keywords at the same place the longer wins ("chinese food" is food),
    then the topic listed first.
    """
    best: tuple[int, int, int] | None = None
    chosen = ""
    for rank, (topic, pattern) in enumerate(_TOPIC_MATCHERS):
        for match in pattern.finditer(text):
            key = (match.start(), -len(match.group()), rank)
            if best is None or key < best:
                best, chosen = key, topic
            break  # the first match of a topic is its earliest
    return chosen


# ---------------------------------------------------------------- shared rules

_HEDGE = re.compile(
    r"可能|也许|大概|好像|似乎|估计|或许|说不定|不确定|不太确定|我觉得|我猜|貌似|应该是"
    r"|\b(?:maybe|perhaps|probably|possibly|might|i think|i guess|i believe|i suppose"
    r"|not sure|i'm not sure|kind of|sort of|i feel like|apparently|presumably)\b",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(
    r"如果|要是|假如|假设|万一|若是|倘若|的话|假若"
    r"|\b(?:if|suppose|supposing|imagine|unless|in case|wish|what if)\b",
    re.IGNORECASE,
)
_DENIAL = re.compile(
    r"没说|没有说|并没有说|不是说|没讲过"
    r"|\b(?:didn't say|did not say|never said|not saying|i'm not saying|not that i)\b",
    re.IGNORECASE,
)
_QUESTION_EN = re.compile(
    r"^(?:do|does|did|am|is|are|was|were|can|could|would|should|will|shall|have|has|may)\s+"
    r"(?:i|you|we|my|it|they|he|she|there|the|this|that)\b"
    r"|^(?:what|where|who|whom|whose|why|how|which)\b",
    re.IGNORECASE,
)
_QUESTION_ZH = re.compile(
    r"[吗呢么]$|是不是|有没有|能不能|要不要|会不会|对不对|可不可以|什么|哪|谁|怎么|为什么|为啥|几点|多少"
)
_TAG_QUESTION = re.compile(
    r"^\s*(?:你呢|您呢|那你呢|你觉得呢|你觉得|你看|可以吗|好吗|行吗|好不好|可以不"
    r"|what about you|how about you|and you|can you|could you|would you|will you|do you)",
    re.IGNORECASE,
)
_TERMINAL = re.compile(r"[\s。！？；.!?;,，、:：~～…]+$")

_ISO_DATE = re.compile(
    r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}))?(?!\d)",
)


def iso_date_ms(text: str) -> int:
    """Ms since the epoch of the first valid ISO date (UTC) in the text, else 0."""
    for match in _ISO_DATE.finditer(text):
        year, month, day, hour, minute = match.groups()
        try:
            moment = datetime.datetime(
                int(year),
                int(month),
                int(day),
                int(hour or 0),
                int(minute or 0),
                tzinfo=datetime.UTC,
            )
        except ValueError:
            continue
        return int(moment.timestamp() * 1000)
    return 0


def _statement(sentence: str) -> str | None:
    """The sentence without a trailing tag question, or None if it is a question."""
    text = sentence.strip()
    if not text.endswith(("?", "？")):
        return text
    parts = re.split(r"[,，]", text)
    if len(parts) > 1 and _TAG_QUESTION.match(parts[-1]):
        return text[: len(text) - len(parts[-1]) - 1]
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class _Found:
    type: MemoryType
    content: str
    topic: str = ""
    importance: float = IMPORTANCE_PROFILE
    keyword_topic: bool = True
    """Whether to look the topic up in the vocabulary when the rule gave none."""


# --------------------------------------------------------------------- Chinese

_ZH_MARKERS = re.compile(
    r"^(?:(?:对了|顺便说一下|顺便说|顺便提一下|顺便|另外|还有|而且|并且|但是|但|不过|其实|说实话|老实说"
    r"|然后|所以|同时|嗯+|哦|噢|啊|好的|话说|请记住|记住|记一下|你记一下|帮我记一下|帮我记住|注意"
    r"|补充一下|哈哈+)[，,：:、\s]*)+"
)
_ZH_LEADING_HEDGE = re.compile(
    r"^(?:我觉得|我猜|可能|也许|大概|好像|估计|说不定|或许|似乎|不太确定|不确定)[，,\s]*"
)
_ZH_ADV = (
    r"(?:也|还|都|很|非常|特别|最|真的|比较|更|一直|总是|平时|一般|通常|其实|可能|也许|大概|好像"
    r"|应该|确实|本来|现在|目前|已经|从来|向来|超|挺|蛮|有点|稍微|似乎|或许)*"
)
_ZH_SPLIT = re.compile(
    r"[，,](?=\s*(?:而且|但是|但|不过|另外|还有|并且|同时|所以))"
    r"|[，,](?=\s*(?:我|咱们|以后|今后|从现在开始|请|提醒|记得|别忘|明天|后天|下周|下个月|下星期"
    r"|每次|也|还|在|住在|一直))"
)
_ZH_SUBJECT = re.compile(r"^(?:我们|咱们|我)")
_ZH_NO_CARRY = re.compile(r"^(?:以后|今后|从现在开始|请|提醒|记得|别忘)")
_ZH_DATE = re.compile(
    r"明天|后天|大后天|下周|下星期|下个月|下个星期|月底|年底"
    r"|(?:周|星期|礼拜)[一二三四五六日天]|\d{1,2}月\d{1,2}[日号]|\d{4}-\d{2}-\d{2}"
    r"|\d{1,2}[点:：]\d{0,2}|[一二三四五六七八九十]{1,3}点"
)
"""Dates that place a plan: with 我 or an event word they make an event."""
_ZH_LEADING_TIME = re.compile(
    r"^([\d\-:：/年月日号周星期礼拜一二三四五六七八九十天今明后下上午晚点半个\s]+?)(我们|咱们|我)"
)
_ZH_NEAR = re.compile(r"今天|今晚|本周|这周|周末|[上下]午|晚上")
"""Today and its parts: an event only with an event word (我今天很累 is not one)."""
_ZH_EVENT = re.compile(
    r"会议|开会|面试|航班|飞机|出差|生日|预约|约了|考试|婚礼|聚会|演讲|发布|上线|看病|体检|旅行|旅游"
)
_ZH_TASK = re.compile(r"需要|得|必须|要交|截止|提交|完成|交付|记得|别忘")
_ZH_POINTING = re.compile(
    r"^(?:这个|那个|这样|那样|这些|那些|这里|那里|你们|你|您|它|他|她)[。！!~～啊呀呢吧了的\s]*$"
    r"|^(?:你的|你这个|你说的|你刚才)"
)


def _zh_third_person(text: str) -> str:
    """我们/咱们/我 at the start -> 用户; later 我的 -> 自己的, 我 -> 用户."""
    text = re.sub(r"^(?:我们|咱们|我)", "用户", text)
    text = text.replace("我们", "用户").replace("咱们", "用户")
    text = text.replace("我的", "自己的") if text.startswith("用户") else text
    return text.replace("我", "用户")


def _zh_rules(clause: str) -> _Found | None:
    c = clause
    adv = _ZH_ADV

    def fact(topic: str = "", importance: float = IMPORTANCE_PROFILE) -> _Found:
        return _Found(MemoryType.FACT, _zh_third_person(c), topic, importance)

    if re.match(rf"^我{adv}(?:对.{{1,20}}?过敏|.{{0,12}}过敏)", c):
        if re.search(r"(?:不|没|没有|不会|并不)过敏", c):
            return None  # 我对猫毛不过敏: no allergy to keep
        return fact("allergy", IMPORTANCE_CORE)
    if re.match(rf"^我{adv}(?:有|患有|得了)(?:糖尿病|哮喘|癫痫|乳糜泻|高血压|心脏病)", c):
        return fact("", IMPORTANCE_CORE)
    if re.match(rf"^(?:我{adv}叫|我的名字(?:是|叫)|(?:请|以后)?叫我)(?!什么).+", c):
        return fact("name")
    if re.match(rf"^我{adv}(?:住在|家在|搬到了?)[^，,]+", c):
        return fact("home_city")
    if re.match(rf"^我{adv}在.{{1,30}}?(?:工作|上班|任职|实习)", c):
        return fact("employer")
    if re.match(rf"^我{adv}(?:吃素|是素食主义者|是纯素食者|只吃素)", c):
        return fact("diet")
    pref = re.match(
        rf"^我{adv}(?:不太|不怎么|不是很|不)?"
        r"(?:喜欢|爱喝|爱吃|爱|偏好|更喜欢|偏爱|讨厌|受不了|习惯|喜爱|钟爱|希望你|想要你)(.*)$",
        c,
    )
    if pref:
        if not pref.group(1).strip() or _ZH_POINTING.match(pref.group(1)):
            return None  # 我喜欢这个 / 我爱你: approval, not a memory
        return _Found(MemoryType.PREFERENCE, _zh_third_person(c))
    if re.match(rf"^我{adv}(?:不吃|不喝|不能吃|不能喝|从不吃|从来不吃|只喝|只吃|不用)", c):
        return _Found(MemoryType.PREFERENCE, _zh_third_person(c))
    if re.search(
        r"^(?:请|麻烦)?(?:你)?(?:以后|今后|从现在开始|从现在起|从今以后|往后)"
        r"|^(?:请|麻烦)?(?:你)?(?:每次都|一律|永远|始终|总是)|^(?:请|麻烦)?(?:你)?(?:别|不要)再",
        c,
    ) or re.match(r"^以后(?:都|请|就|别|不要|统一|一律|也|用|回答|叫我)", c):
        if re.search(r"再(?:说|聊|看|讲|议)", c):
            return None  # 以后再说: not now
        return _Found(MemoryType.PREFERENCE, f"用户要求：{_zh_third_person(c)}")
    if re.match(
        rf"^(?:我们|咱们){adv}(?:决定|定了|确定|选择|选了|就用|还是用|统一用|改用|改成|换成|用)"
        rf"|^我{adv}(?:决定|定了|选择了|选了|改用|换成)",
        c,
    ):
        return _Found(MemoryType.DECISION, _zh_third_person(c))
    if re.match(r"^(?:请|麻烦)?(?:你)?(?:用|回答|回复|说话|写|保持)", c) and topic_for(c) in (
        "communication_style",
        "language",
    ):
        return _Found(MemoryType.PREFERENCE, f"用户要求：{_zh_third_person(c)}")
    decided = re.match(r"^(?:最终|最后)?(?:决定|确定)(?:了)?(.+)$", c)
    if decided:
        return _Found(MemoryType.DECISION, "用户决定" + decided.group(1).lstrip("：:，, "))
    go_with = re.match(r"^(?:那|那么|那就)?就?(?:用|选|定)(.+?)吧$", c)
    if go_with and c.startswith(("那", "就")):
        return _Found(MemoryType.DECISION, f"用户决定用{go_with.group(1)}")
    remind = re.search(r"(?:请|麻烦)?(?:帮我|你)?提醒我(.+)$", c)
    if remind:
        task = remind.group(1).lstrip("：:，, ")
        return _Found(MemoryType.TASK, f"提醒用户{task}", "", IMPORTANCE_TASK, False)
    if re.match(r"^我?(?:得|要|需要|先)(?:先)?(?:走|睡|下线|去忙|撤)了?$", c):
        return None  # 我得走了: chit-chat
    if re.match(rf"^我{adv}(?:需要|得(?!了)|必须|要记得|记得要|一定要)", c) or re.match(
        r"^(?:别忘了|不要忘了|记得)", c
    ):
        content = _zh_third_person(c)
        if not content.startswith("用户"):
            content = "用户需要" + re.sub(r"^(?:别忘了|不要忘了|记得)", "", content)
        return _Found(MemoryType.TASK, content, "", IMPORTANCE_TASK, False)
    if (_ZH_DATE.search(c) and ("我" in c or _ZH_EVENT.search(c))) or (
        _ZH_NEAR.search(c) and _ZH_EVENT.search(c)
    ):
        kind = MemoryType.TASK if _ZH_TASK.search(c) else MemoryType.EVENT
        when = _ZH_LEADING_TIME.match(c)
        if when:  # 下周三我要去上海 -> 用户下周三要去上海
            c = when.group(2) + when.group(1).strip() + c[when.end() :]
        content = _zh_third_person(c)
        if "用户" not in content:
            content = "用户" + content
        return _Found(kind, content, "", IMPORTANCE_TASK, False)
    if re.match(rf"^我{adv}(?:养了|养着|养)", c):
        return fact("pet")
    if re.match(rf"^我{adv}(?:有|家有)(?:一|两|三|几)?(?:只|条|个)?", c) and topic_for(c) == "pet":
        return fact("pet")
    if re.match(rf"^我{adv}(?:会说|会讲|说|讲)", c) and topic_for(c) == "language":
        return fact("language")
    if re.match(rf"^我{adv}(?:用|在用|使用|常用)", c) and topic_for(c):
        return fact()
    if re.match(r"^我的(.{1,12}?)(?:是|叫|在)(.+)$", c):
        return fact()
    identity = re.match(rf"^我{adv}是(?!说|不是|在|想|问|指|开玩笑|随便)(.{{1,40}})$", c)
    if identity and identity.group(1).strip("的啊呀吧了哦呢嘛 "):
        return fact()
    return None


def _zh_clauses(sentence: str) -> list[str]:
    clauses: list[str] = []
    subject = ""
    for part in re.split(r"[；;]", sentence):
        for piece in _ZH_SPLIT.split(part):
            clause = _ZH_MARKERS.sub("", _TERMINAL.sub("", piece.strip())).strip()
            if not clause:
                continue
            own = _ZH_SUBJECT.match(_ZH_LEADING_HEDGE.sub("", clause))
            if own:
                subject = own.group()
            elif subject and clauses and not _ZH_NO_CARRY.match(clause):
                clause = subject + clause
            clauses.append(clause)
    return clauses


# --------------------------------------------------------------------- English

_EN_MARKERS = re.compile(
    r"^(?:(?:oh|ah|well|so|and|but|also|plus|btw|by the way|actually|honestly|fyi|for the record"
    r"|just so you know|note that|please note that|remember that|please remember that"
    r"|keep in mind that|ps|anyway|anyways|okay|ok|yeah|yes|hmm+|um+|oh and|one more thing"
    r"|for context|fun fact)(?:[,:]\s*|\s+))+",
    re.IGNORECASE,
)
_EN_LEADING_HEDGE = re.compile(
    r"^(?:(?:i think|i guess|i believe|i suppose|i assume|maybe|perhaps|probably|possibly"
    r"|apparently|i feel like|(?:i'm |i am )?not (?:100% )?sure(?:,)? but)\b[,]?\s*(?:that\s+)?)+",
    re.IGNORECASE,
)
_EN_ADV = (
    r"(?:(?:really|also|still|usually|generally|actually|definitely|absolutely|much|mostly"
    r"|typically|normally|totally|honestly|just|truly|kind of|sort of|probably|maybe|perhaps"
    r"|personally|now|currently|strongly|mainly)\s+)*"
)
_EN_STARTERS = (
    r"i|i'm|i've|i'd|i'll|my|we|we're|we've|we'll|let's|please|remind|from now on|going forward"
)
_EN_SPLIT = re.compile(
    rf"\s*[,;]\s*(?:(?:and|but|also|plus|so|and also)\s+)?(?=(?:{_EN_STARTERS})\b)"
    rf"|\s+(?:and|but|plus)\s+(?=(?:also\s+)?(?:{_EN_STARTERS})\b)"
    r"|\s*[,;]?\s+(?:and|but)\s+(?=(?:also\s+)?(?:live|work|prefer|like|love|hate|am|use|speak"
    r"|need|have|own)\b)"
    r"|\s*;\s*",
    re.IGNORECASE,
)
_EN_SUBJECT = re.compile(r"^(?:i|we)\b", re.IGNORECASE)
_EN_CARRY = re.compile(
    r"^(?:also\s+)?(?:live|work|prefer|like|love|hate|am|use|speak|need|have|own)\b", re.IGNORECASE
)
_EN_NEAR = re.compile(
    r"\b(?:today|tonight|this (?:morning|afternoon|evening|weekend))\b", re.IGNORECASE
)
"""Today and its parts: an event only with an event word ("I'm tired today" is not one)."""
_EN_DATE = re.compile(
    r"\b(?:tomorrow|this (?:mon|tues|wednes|thurs|fri|satur|sun)day"
    r"|next (?:week|month|year|weekend|(?:mon|tues|wednes|thurs|fri|satur|sun)day)"
    r"|(?:on |this |by )?(?:mon|tues|wednes|thurs|fri|satur|sun)day"
    r"|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?"
    r"|\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*"
    r"|at \d{1,2}(?::\d{2})?\s*(?:am|pm)|\d{1,2}(?::\d{2})?\s*(?:am|pm)"
    r"|end of (?:the )?(?:day|week|month)|eod)\b"
    r"|(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)",
    re.IGNORECASE,
)
_EN_EVENT = re.compile(
    r"\b(?:meeting|appointment|flight|interview|dentist|doctor|birthday|wedding|exam|standup"
    r"|demo|launch|release|trip|conference|party|dinner|call with|deadline|due)\b",
    re.IGNORECASE,
)
_EN_TASK = re.compile(
    r"\b(?:need to|have to|must|got to|gotta|deadline|due|by (?:the )?(?:mon|tues|wednes|thurs"
    r"|fri|satur|sun)day|by tomorrow|by eod|by end of|submit|finish|hand in|send)\b",
    re.IGNORECASE,
)
_EN_FIRST_PERSON = re.compile(r"^(?:i|i'm|i've|i'll|i'd|we|we're|we'll|my)\b", re.IGNORECASE)
_EN_POINTING = re.compile(
    r"^(?:it|this|that|them|these|those|you|you guys|you all|yours|the idea|that idea"
    r"|this idea|that one|this one|the answer|that answer|this answer)"
    r"(?:\s+(?:a lot|so much|very much|too|as well))?[\s.!]*$"
    r"|^(?:your|how you|the way you|it when|when you|what you)\b",
    re.IGNORECASE,
)

_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is"}
_PAST = frozenset(
    {
        "was", "had", "went", "made", "got", "took", "ate", "drank", "chose", "left", "began",
        "bought", "met", "saw", "said", "told", "thought", "knew", "came", "became", "grew",
        "wrote", "spoke", "drove", "flew", "quit", "sold", "won", "put", "read", "set",
    }
)  # fmt: skip
_ADVERBS = frozenset(
    {"always", "never", "usually", "often", "sometimes", "rarely", "also", "still", "really",
     "only", "just", "mostly", "generally", "typically", "normally", "actually", "definitely",
     "absolutely", "probably", "maybe", "perhaps", "totally", "honestly", "strongly",
     "personally", "now", "currently", "much", "truly", "kind", "sort", "of", "even",
     "already", "first", "mainly", "seriously", "obviously", "rather"}
)  # fmt: skip
_MODAL_VERBS = frozenset(
    {"can", "could", "should", "must", "might", "may", "will", "would", "shall", "won't",
     "wouldn't", "can't", "cannot", "couldn't", "shouldn't", "didn't", "did", "don't"}
)  # fmt: skip


def _third_person_verb(verb: str) -> str:
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low in _PAST or (low.endswith("ed") and not low.endswith("eed")) or not low.isalpha():
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


_I = re.IGNORECASE
_EN_HEAD: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^(?:i'm|i am)\b", _I), "The user is"),
    (re.compile(r"^(?:i've|i have)\b(?=\s+(?:been|got|moved|decided))", _I), "The user has"),
    (re.compile(r"^(?:i'd|i would)\b", _I), "The user would"),
    (re.compile(r"^(?:i'll|i will)\b", _I), "The user will"),
    (re.compile(r"^(?:i don't|i do not)\b", _I), "The user does not"),
    (re.compile(r"^(?:i can't|i cannot)\b", _I), "The user cannot"),
    (re.compile(r"^(?:we're|we are)\b", _I), "The user is"),
    (re.compile(r"^(?:we've|we have)\b(?=\s+(?:decided|agreed|chosen))", _I), "The user has"),
    (re.compile(r"^(?:we'll|we will)\b", _I), "The user will"),
    (re.compile(r"^let's\b", _I), "The user decided to"),
    (re.compile(r"^my\b", _I), "The user's"),
    (re.compile(r"^(?:please\s+)?call me\b", _I), "The user wants to be called"),
]  # fmt: skip
_EN_REST: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?:i'm|i am)\b", _I), "they are"),
    (re.compile(r"\bi've\b", _I), "they have"),
    (re.compile(r"\bi'd\b", _I), "they would"),
    (re.compile(r"\bi'll\b", _I), "they will"),
    (re.compile(r"\bmyself\b", _I), "themselves"),
    (re.compile(r"\bmine\b", _I), "theirs"),
    (re.compile(r"\bmy\b", _I), "their"),
    (re.compile(r"\bme\b", _I), "them"),
    (re.compile(r"\bI\b"), "they"),
]


def _en_rest(text: str) -> str:
    """First-person words after the subject -> they/their/them."""
    for pattern, replacement in _EN_REST:
        text = pattern.sub(replacement, text)
    return text


def _en_third_person(clause: str) -> str:
    """Rewrites "I prefer tea" as "The user prefers tea"; the clause verbatim if it cannot."""
    text = " ".join(clause.split())
    for pattern, replacement in _EN_HEAD:
        match = pattern.match(text)
        if match:
            return replacement + _en_rest(text[match.end() :])
    subject = re.match(r"^(?:i|we)\s+", text, _I)
    if not subject:
        return clause
    words = text[subject.end() :].split(" ")
    index, modal = 0, False
    while index < len(words) and words[index].lower() in _ADVERBS | _MODAL_VERBS:
        modal = modal or words[index].lower() in _MODAL_VERBS
        index += 1
    verb = re.match(r"^([A-Za-z]+)(.*)$", words[index]) if index < len(words) else None
    if verb is None:
        return clause
    conjugated = verb.group(1) if modal else _third_person_verb(verb.group(1))
    head = " ".join(["The user", *words[:index], conjugated + verb.group(2)])
    rest = words[index + 1 :]
    return head + (" " + _en_rest(" ".join(rest)) if rest else "")


_EN_LEADING_DATE = re.compile(
    r"^((?:today|tonight|tomorrow|next \w+|this \w+|on \w+day|\w+day)"
    r"(?:\s+(?:morning|afternoon|evening|night))?)[,]?\s+"
    r"(?=(?:i|i'm|i've|i'll|we|we're|we'll|my)\b)",
    _I,
)


def _en_rules(clause: str) -> _Found | None:
    c = clause
    adv = _EN_ADV
    i = re.IGNORECASE

    def fact(topic: str = "", importance: float = IMPORTANCE_PROFILE) -> _Found:
        return _Found(MemoryType.FACT, _en_third_person(c), topic, importance)

    if re.match(
        rf"^(?:i'm|i am)\s+{adv}(?:severely\s+|very\s+|mildly\s+)?allergic\s+to\s+\S", c, i
    ):
        return fact("allergy", IMPORTANCE_CORE)
    if re.match(
        rf"^(?:i\s+{adv}have|i've\s+got|i've)\s+(?:an?\s+)?(?:[\w-]+\s+){{0,3}}allerg", c, i
    ):
        return fact("allergy", IMPORTANCE_CORE)
    if re.match(
        rf"^(?:i'm|i am)\s+{adv}(?:diabetic|celiac|coeliac|epileptic|asthmatic)\b"
        rf"|^i\s+{adv}have\s+(?:type [12] )?(?:diabetes|celiac disease|epilepsy|asthma)\b",
        c,
        i,
    ):
        return fact("", IMPORTANCE_CORE)
    if re.match(r"^(?:my name is|my name's|(?:please\s+)?call me|i go by)\s+\S", c, i):
        return fact("name")
    if re.match(
        rf"^(?:i\s+{adv}live\s+in|(?:i'm|i am)\s+{adv}based\s+in|i\s+{adv}moved\s+to)\s+\S", c, i
    ):
        return fact("home_city")
    if re.match(
        rf"^(?:i\s+{adv}work\s+(?:at|for)"
        rf"|(?:i'm|i am)\s+{adv}(?:working|employed)\s+(?:at|for))\s+\S",
        c,
        i,
    ):
        return fact("employer")
    if re.match(
        rf"^(?:i'm|i am)\s+{adv}(?:a\s+)?(?:strict\s+)?(?:vegetarian|vegan|pescatarian"
        r"|lactose[- ]intolerant|gluten[- ]free|kosher|halal)\b",
        c,
        i,
    ):
        return fact("diet")
    pref = re.match(
        rf"^(?:i\s+{adv}(?:prefer|like|love|enjoy|adore|hate|dislike|detest|can't stand"
        r"|cannot stand|don't like|do not like|don't love|don't enjoy|don't want|do not want|avoid)"
        rf"|(?:i'd|i would)\s+{adv}(?:prefer|rather))\s+(.*)$",
        c,
        i,
    )
    if pref:
        if _EN_POINTING.match(pref.group(1)):
            return None  # "I love it", "I like that idea": approval, not a memory
        return _Found(MemoryType.PREFERENCE, _en_third_person(c))
    if re.match(rf"^(?:i'm|i am)\s+{adv}(?:a\s+)?(?:(?:big|huge)\s+)?fan\s+of\s+\S", c, i):
        return _Found(MemoryType.PREFERENCE, _en_third_person(c))
    if re.match(r"^my\s+(?:\w+\s+)?favou?rite\s+[\w' -]{1,30}?\s+(?:is|are)\s+\S", c, i):
        return _Found(MemoryType.PREFERENCE, _en_third_person(c))
    if re.match(rf"^i\s+{adv}(?:always|never|usually|only)\s+[a-z]+\s+\S", c, i):
        return _Found(MemoryType.PREFERENCE, _en_third_person(c))
    if re.match(
        r"^(?:please\s+)?(?:from now on|going forward|moving forward|in the future|henceforth"
        r"|from here on|always|never|don't ever|do not ever|stop\s+\w+ing|no more)\b"
        r"(?!\s*(?:mind|again|questions?)\b)\W*\w",  # not "never mind", "always!"
        c,
        i,
    ):
        body = re.sub(r"^please\s+", "", c, flags=i)
        return _Found(MemoryType.PREFERENCE, f"The user asked: {_lower_first(body)}")
    if re.match(
        rf"^(?:we|i)\s+{adv}(?:(?:have|'ve)\s+)?(?:decided|agreed|chose|chosen|settled on|picked)\b"
        rf"|^(?:we're|we are|we'll|we will|we're going to|we are going to)\s+{adv}"
        r"(?:go(?:ing)? with|use|using|switch(?:ing)? to|stick(?:ing)? with|adopt(?:ing)?)\b"
        r"|^(?:we've|we have)\s+(?:decided|agreed|chosen|settled on|picked)\b"
        r"|^let's\s+(?:go with|use|pick|choose|stick with|switch to|adopt)\b",
        c,
        i,
    ):
        return _Found(MemoryType.DECISION, _en_third_person(c))
    if re.match(
        r"^(?:please\s+)?(?:keep|make|answer|reply|respond|write|talk|speak|use|give me|be)\b", c, i
    ) and topic_for(c) in ("communication_style", "language"):
        body = re.sub(r"^please\s+|\s+please$", "", c, flags=i)
        return _Found(MemoryType.PREFERENCE, f"The user asked: {_lower_first(_en_rest(body))}")
    decision = re.match(r"^decision\s*[:：-]\s*(.+)$", c, i)
    if decision:
        return _Found(MemoryType.DECISION, f"The user decided: {decision.group(1)}")
    remind = re.search(r"\bremind me\s+(\S.*)$", c, i)
    if remind and not re.match(r"(?:later|soon|again|tomorrow|tonight)$", remind.group(1), i):
        body = _en_rest(remind.group(1))
        return _Found(MemoryType.TASK, f"Remind the user {body}", "", IMPORTANCE_TASK, False)
    if re.match(
        r"^i(?:'ve)?\s+(?:\w+\s+)?(?:need to|have to|got to|gotta|must|should)\s+"
        r"(?:go|leave|run|sleep|think|check|ask|log off|head out)"
        r"(?:\s+(?:now|soon|first|about it|about that|it over))?$",
        c,
        i,
    ):
        return None  # "I have to go now": chit-chat
    if re.match(
        rf"^i\s+{adv}(?:need to|have to|must|got to|gotta|should)\b|^i've\s+got\s+to\b"
        r"|^(?:don't|do not) forget to\b|^remember to\b",
        c,
        i,
    ):
        content = _en_third_person(c)
        if not content.startswith("The user"):
            content = "The user needs to " + _en_rest(re.sub(r"^.*?\bto\s+", "", c, count=1))
        return _Found(MemoryType.TASK, content, "", IMPORTANCE_TASK, False)
    if (
        _EN_DATE.search(c)
        and (_EN_FIRST_PERSON.match(c) or _EN_LEADING_DATE.match(c) or _EN_EVENT.search(c))
    ) or (_EN_NEAR.search(c) and _EN_EVENT.search(c)):
        kind = MemoryType.TASK if _EN_TASK.search(c) else MemoryType.EVENT
        when = _EN_LEADING_DATE.match(c)
        if when:
            content = f"{_en_third_person(c[when.end() :])} {_lower_first(when.group(1))}"
        elif _EN_FIRST_PERSON.match(c):
            content = _en_third_person(c)
        else:
            content = _en_rest(c)
        return _Found(kind, content, "", IMPORTANCE_TASK, False)
    if (
        re.match(rf"^i\s+{adv}(?:have|own)\s+(?:a|an|one|two|three|\d+)\s+", c, i)
        and topic_for(c) == "pet"
    ):
        return fact("pet")
    if re.match(rf"^i\s+{adv}speak\s+\S", c, i) and topic_for(c) == "language":
        return fact("language")
    if re.match(
        rf"^(?:i\s+{adv}(?:use|code in|program in|write|run)|(?:i'm|i am)\s+{adv}using)\s+\S", c, i
    ) and topic_for(c):
        return fact()
    if re.match(r"^(?:i'm|i am)\s+(?:in|on)\s+.*\btime\s?zone\b", c, i):
        return fact("timezone")
    if re.match(
        r"^my\s+(?!bad\b|pleasure\b|apologies\b|god\b|goodness\b)[\w' -]{1,30}?\s+(?:is|are)\s+\S",
        c,
        i,
    ):
        return fact()
    if re.match(rf"^(?:i'm|i am)\s+{adv}(?:a|an)\s+(?!bit\b|little\b|lot\b)\w", c, i) or re.match(
        rf"^(?:i'm|i am)\s+{adv}from\s+\S", c, i
    ):
        return fact()
    return None


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def _en_clauses(sentence: str) -> list[str]:
    clauses: list[str] = []
    subject = ""
    for piece in _EN_SPLIT.split(sentence):
        clause = _EN_MARKERS.sub("", _TERMINAL.sub("", piece.strip())).strip()
        if not clause:
            continue
        own = _EN_SUBJECT.match(_EN_LEADING_HEDGE.sub("", clause))
        if own:
            subject = own.group()
        elif subject and clauses and _EN_CARRY.match(clause):
            clause = f"{subject} {clause}"
        clauses.append(clause)
    return clauses


# ------------------------------------------------------------------ extraction


_LATIN_WORD = re.compile(r"[A-Za-z]+")


def _mostly_chinese(text: str) -> bool:
    """At least as many Chinese characters as Latin words (and some): Chinese rules first."""
    cjk = len(_CJK.findall(text))
    return cjk > 0 and cjk >= len(_LATIN_WORD.findall(text))


def _candidate(clause: str) -> MemoryCandidate | None:
    clause = clause.replace("’", "'").replace("‘", "'").strip()
    if not clause or len(clause) > MAX_CLAUSE_CHARS:
        return None
    has_cjk = bool(_CJK.search(clause))
    if _HYPOTHETICAL.search(clause) or _DENIAL.search(clause):
        return None
    if _QUESTION_EN.match(clause) or (has_cjk and _QUESTION_ZH.search(clause)):
        return None
    hedged = bool(_HEDGE.search(clause))
    core = _EN_LEADING_HEDGE.sub("", _ZH_LEADING_HEDGE.sub("", clause)).strip()
    if not core:
        return None
    chinese = _mostly_chinese(core)
    first, second = (_zh_rules, _en_rules) if chinese else (_en_rules, _zh_rules)
    found = first(core)
    if found is None and has_cjk:
        found = second(core)  # "I prefer 乌龙茶", "我用VS Code"
    if found is None:
        return None
    content = found.content.strip()
    if core != clause:  # a leading hedge was removed: say it in the content
        if content.startswith("用户") and not _HEDGE.search(content):
            content = "用户可能" + content[2:]
        elif content.startswith("The user"):
            content = "Possibly, the user" + content[len("The user") :]
        elif not _HEDGE.search(content):
            content = ("可能：" if chinese else "Possibly: ") + content
    topic = found.topic
    if not topic and found.keyword_topic:
        topic = topic_for(core)
    if topic in MULTI_VALUED:
        topic = ""
    occurred_at = iso_date_ms(core) if found.type in (MemoryType.TASK, MemoryType.EVENT) else 0
    return MemoryCandidate(
        content=content[:MAX_CONTENT_CHARS],
        type=found.type,
        topic_key=topic,
        confidence=HEDGED if hedged else CONFIDENT,
        importance=found.importance,
        occurred_at=occurred_at,
    )


def extract_from_text(text: str) -> list[MemoryCandidate]:
    """Candidates from one user message, in order."""
    out: list[MemoryCandidate] = []
    for raw in split_sentences(text):
        sentence = _statement(raw)
        if sentence is None:
            continue
        clauses = _zh_clauses(sentence) if _mostly_chinese(sentence) else _en_clauses(sentence)
        for clause in clauses:
            candidate = _candidate(clause)
            if candidate is not None:
                out.append(candidate)
    return out


class RuleExtractor:
    """Proposes memories from user messages by bilingual rules (see the module docstring)."""

    @property
    def name(self) -> str:
        """Which extractor (for spans and logs)."""
        return "rules"

    async def extract(self, messages: Sequence[Message]) -> list[MemoryCandidate]:
        """Candidate memories, in message order; [] when nothing is worth keeping."""
        out: list[MemoryCandidate] = []
        seen: set[str] = set()
        for message in messages:
            if message.role is not Role.USER:
                continue
            for candidate in extract_from_text(message.content):
                key = normalise(candidate.content)
                if key not in seen:
                    seen.add(key)
                    out.append(candidate)
        return out
