"""The Chinese rules: clauses, what each kind of statement looks like, third person."""

from __future__ import annotations

import re

from recalld_server.domain.core.model import MemoryType
from recalld_server.domain.offline.rule_extraction.cues import (
    IMPORTANCE_CORE,
    IMPORTANCE_TASK,
    TERMINAL,
    Found,
    Matcher,
    Rule,
    first_found,
    topic_in,
)

_ZH_MARKERS = re.compile(
    r"^(?:(?:对了|顺便说一下|顺便说|顺便提一下|顺便|另外|还有|而且|并且|但是|但|不过|其实|说实话|老实说"
    r"|然后|所以|同时|嗯+|哦|噢|啊|好的|话说|请记住|记住|记一下|你记一下|帮我记一下|帮我记住|注意"
    r"|补充一下|哈哈+)[，,：:、\s]*)+"
)
ZH_LEADING_HEDGE = re.compile(
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


_ZH_NOT_ALLERGIC = re.compile(r"(?:不|没|没有|不会|并不)过敏")
_ZH_LATER = re.compile(r"再(?:说|聊|看|讲|议)")
_ZH_REMEMBER = re.compile(r"^(?:别忘了|不要忘了|记得)")
_ZH_LEAD_PUNCT = "：:，, "


def _starts(pattern: str) -> Matcher:
    """A rule's test: the shape at the start of the clause."""
    return re.compile(pattern).match


def _not_allergic(clause: str, _match: re.Match[str]) -> bool:
    """我对猫毛不过敏: no allergy to keep."""
    return bool(_ZH_NOT_ALLERGIC.search(clause))


def _pointing(_clause: str, match: re.Match[str]) -> bool:
    """我喜欢这个 / 我爱你 (or nothing after the verb): approval, not a memory."""
    return not match.group(1).strip() or bool(_ZH_POINTING.match(match.group(1)))


def _not_now(clause: str, _match: re.Match[str]) -> bool:
    """以后再说: not now, rather than an instruction."""
    return bool(_ZH_LATER.search(clause))


def _asked(clause: str, _match: re.Match[str]) -> str:
    """An instruction is kept whole, in the third person: rewriting it could change it."""
    return f"用户要求：{_zh_third_person(clause)}"


def _decided(_clause: str, match: re.Match[str]) -> str:
    """决定(了)X: X is the decision, leading punctuation dropped."""
    return "用户决定" + match.group(1).lstrip(_ZH_LEAD_PUNCT)


def _said_then(clause: str, _match: re.Match[str]) -> bool:
    """那就用X吧 / 就用X吧 decides; 用X吧 alone is a suggestion."""
    return clause.startswith(("那", "就"))


def _go_with(_clause: str, match: re.Match[str]) -> str:
    """那就用X吧: X is what was chosen."""
    return f"用户决定用{match.group(1)}"


def _remind(_clause: str, match: re.Match[str]) -> str:
    """提醒我X, wherever it stands in the clause: what to remind of is X."""
    return "提醒用户" + match.group(1).lstrip(_ZH_LEAD_PUNCT)


def _task(clause: str, _match: re.Match[str]) -> str:
    """Without 我 (别忘了X, 记得X): 用户需要X."""
    content = _zh_third_person(clause)
    if not content.startswith("用户"):
        content = "用户需要" + _ZH_REMEMBER.sub("", content)
    return content


def _dated(clause: str) -> re.Match[str] | None:
    """A date said with 我 or of an event, or today with an event word: an event."""
    date = _ZH_DATE.search(clause)
    if date and ("我" in clause or _ZH_EVENT.search(clause)):
        return date
    near = _ZH_NEAR.search(clause)
    return near if near and _ZH_EVENT.search(clause) else None


def _dated_content(clause: str, _match: re.Match[str]) -> str:
    """The subject goes first: 下周三我要去上海 -> 用户下周三要去上海."""
    when = _ZH_LEADING_TIME.match(clause)
    if when:
        clause = when.group(2) + when.group(1).strip() + clause[when.end() :]
    content = _zh_third_person(clause)
    return content if "用户" in content else "用户" + content


def _said_something(_clause: str, match: re.Match[str]) -> bool:
    """我是的啊: nothing said after 是."""
    return bool(match.group(1).strip("的啊呀吧了哦呢嘛 "))


_FACT, _PREFERENCE, _DECISION = MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.DECISION
_TASK, _EVENT = MemoryType.TASK, MemoryType.EVENT
_A = _ZH_ADV  # short, for the patterns below: adverbs between subject and verb
_ZH_RULES: tuple[Rule, ...] = (
    Rule(
        _starts(rf"^我{_A}(?:对.{{1,20}}?过敏|.{{0,12}}过敏)"),
        _FACT, topic="allergy", importance=IMPORTANCE_CORE, unless=_not_allergic,
    ),
    Rule(
        _starts(rf"^我{_A}(?:有|患有|得了)(?:糖尿病|哮喘|癫痫|乳糜泻|高血压|心脏病)"),
        _FACT, importance=IMPORTANCE_CORE,
    ),
    Rule(
        _starts(rf"^(?:我{_A}叫|我的名字(?:是|叫)|(?:请|以后)?叫我)(?!什么).+"), _FACT, topic="name"
    ),
    Rule(_starts(rf"^我{_A}(?:住在|家在|搬到了?)[^，,]+"), _FACT, topic="home_city"),
    Rule(_starts(rf"^我{_A}在.{{1,30}}?(?:工作|上班|任职|实习)"), _FACT, topic="employer"),
    Rule(_starts(rf"^我{_A}(?:吃素|是素食主义者|是纯素食者|只吃素)"), _FACT, topic="diet"),
    Rule(
        _starts(
            rf"^我{_A}(?:不太|不怎么|不是很|不)?"
            r"(?:喜欢|爱喝|爱吃|爱|偏好|更喜欢|偏爱|讨厌|受不了|习惯|喜爱|钟爱|希望你|想要你)(.*)$"
        ),
        _PREFERENCE, unless=_pointing,
    ),
    Rule(
        _starts(rf"^我{_A}(?:不吃|不喝|不能吃|不能喝|从不吃|从来不吃|只喝|只吃|不用)"), _PREFERENCE
    ),
    # 以后…, 每次都…, 别再…: an instruction (this covers 以后都/以后请/以后别… too)
    Rule(
        re.compile(
            r"^(?:请|麻烦)?(?:你)?(?:以后|今后|从现在开始|从现在起|从今以后|往后)"
            r"|^(?:请|麻烦)?(?:你)?(?:每次都|一律|永远|始终|总是)|^(?:请|麻烦)?(?:你)?(?:别|不要)再"
        ).search,
        _PREFERENCE, write=_asked, unless=_not_now,
    ),
    Rule(
        _starts(
            rf"^(?:我们|咱们){_A}(?:决定|定了|确定|选择|选了|就用|还是用|统一用|改用|改成|换成|用)"
            rf"|^我{_A}(?:决定|定了|选择了|选了|改用|换成)"
        ),
        _DECISION,
    ),
    Rule(
        _starts(r"^(?:请|麻烦)?(?:你)?(?:用|回答|回复|说话|写|保持)"),
        _PREFERENCE, write=_asked, when=topic_in("communication_style", "language"),
    ),
    Rule(_starts(r"^(?:最终|最后)?(?:决定|确定)(?:了)?(.+)$"), _DECISION, write=_decided),
    Rule(
        _starts(r"^(?:那|那么|那就)?就?(?:用|选|定)(.+?)吧$"),
        _DECISION, write=_go_with, when=_said_then,
    ),
    Rule(
        re.compile(r"(?:请|麻烦)?(?:帮我|你)?提醒我(.+)$").search,
        _TASK, importance=IMPORTANCE_TASK, keyword_topic=False, write=_remind,
    ),
    # 我得走了: chit-chat, a shape that states nothing
    Rule(_starts(r"^我?(?:得|要|需要|先)(?:先)?(?:走|睡|下线|去忙|撤)了?$"), None),
    Rule(
        _starts(rf"^我{_A}(?:需要|得(?!了)|必须|要记得|记得要|一定要)"),
        _TASK, importance=IMPORTANCE_TASK, keyword_topic=False, write=_task,
    ),
    Rule(
        _starts(r"^(?:别忘了|不要忘了|记得)"),
        _TASK, importance=IMPORTANCE_TASK, keyword_topic=False, write=_task,
    ),
    Rule(
        _dated,
        _EVENT, importance=IMPORTANCE_TASK, keyword_topic=False, task_if=_ZH_TASK,
        write=_dated_content,
    ),
    Rule(_starts(rf"^我{_A}(?:养了|养着|养)"), _FACT, topic="pet"),
    Rule(
        _starts(rf"^我{_A}(?:有|家有)(?:一|两|三|几)?(?:只|条|个)?"),
        _FACT, topic="pet", when=topic_in("pet"),
    ),
    Rule(
        _starts(rf"^我{_A}(?:会说|会讲|说|讲)"), _FACT, topic="language", when=topic_in("language")
    ),
    Rule(_starts(rf"^我{_A}(?:用|在用|使用|常用)"), _FACT, when=topic_in()),
    Rule(_starts(r"^我的(.{1,12}?)(?:是|叫|在)(.+)$"), _FACT),
    Rule(
        _starts(rf"^我{_A}是(?!说|不是|在|想|问|指|开玩笑|随便)(.{{1,40}})$"),
        _FACT, when=_said_something,
    ),
)  # fmt: skip
"""What each kind of Chinese statement looks like, in order: the first that fits wins."""


def zh_rules(clause: str) -> Found | None:
    """What a Chinese clause states (first rule that matches), or None."""
    return first_found(_ZH_RULES, clause, _zh_third_person)


def zh_clauses(sentence: str) -> list[str]:
    """A Chinese sentence's clauses; one without a subject takes the previous one's."""
    clauses: list[str] = []
    subject = ""
    for part in re.split(r"[；;]", sentence):
        for piece in _ZH_SPLIT.split(part):
            clause = _ZH_MARKERS.sub("", TERMINAL.sub("", piece.strip())).strip()
            if not clause:
                continue
            own = _ZH_SUBJECT.match(ZH_LEADING_HEDGE.sub("", clause))
            if own:
                subject = own.group()
            elif subject and clauses and not _ZH_NO_CARRY.match(clause):
                clause = subject + clause
            clauses.append(clause)
    return clauses
