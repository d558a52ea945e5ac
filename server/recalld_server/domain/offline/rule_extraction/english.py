"""The English rules: clauses, what each kind of statement looks like, third person."""

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

_EN_MARKERS = re.compile(
    r"^(?:(?:oh|ah|well|so|and|but|also|plus|btw|by the way|actually|honestly|fyi|for the record"
    r"|just so you know|note that|please note that|remember that|please remember that"
    r"|keep in mind that|ps|anyway|anyways|okay|ok|yeah|yes|hmm+|um+|oh and|one more thing"
    r"|for context|fun fact)(?:[,:]\s*|\s+))+",
    re.IGNORECASE,
)
EN_LEADING_HEDGE = re.compile(
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
_EN_LATER = re.compile(r"(?:later|soon|again|tomorrow|tonight)$", _I)
_EN_PLEASE = re.compile(r"^please\s+", _I)
_EN_PLEASE_AROUND = re.compile(r"^please\s+|\s+please$", _I)
_EN_UP_TO_TO = re.compile(r"^.*?\bto\s+")


def _lower_first(text: str) -> str:
    """Lower-cases a leading capital, not an acronym ("NASA", "I'm" stay)."""
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def _starts(pattern: str) -> Matcher:
    """A rule's test: the shape at the start of the clause, in any case."""
    return re.compile(pattern, _I).match


def _pointing(_clause: str, match: re.Match[str]) -> bool:
    """Approval of what was said ("I love it", "I like that idea") is not a memory."""
    return bool(_EN_POINTING.match(match.group(1)))


def _asked(clause: str, _match: re.Match[str]) -> str:
    """An instruction is kept as said (without "please"): rewriting it could change it."""
    return f"The user asked: {_lower_first(_EN_PLEASE.sub('', clause))}"


def _asked_style(clause: str, _match: re.Match[str]) -> str:
    """A style request as said, its first person made third ("answer me in English")."""
    return f"The user asked: {_lower_first(_en_rest(_EN_PLEASE_AROUND.sub('', clause)))}"


def _decided(_clause: str, match: re.Match[str]) -> str:
    """A "Decision: X" note: X is the decision, whatever its grammar."""
    return f"The user decided: {match.group(1)}"


def _not_later(_clause: str, match: re.Match[str]) -> bool:
    """Remind me later, soon, again...: nothing named to be reminded of."""
    return not _EN_LATER.match(match.group(1))


def _remind(_clause: str, match: re.Match[str]) -> str:
    """Remind me X, wherever it stands in the clause: what to remind of is X."""
    return f"Remind the user {_en_rest(match.group(1))}"


def _task(clause: str, _match: re.Match[str]) -> str:
    """Without a subject to rewrite ("Don't forget to X"): "The user needs to X"."""
    content = _en_third_person(clause)
    if not content.startswith("The user"):
        content = "The user needs to " + _en_rest(_EN_UP_TO_TO.sub("", clause, count=1))
    return content


def _dated(clause: str) -> re.Match[str] | None:
    """A date said of oneself or of an event, or today with an event word: an event."""
    date = _EN_DATE.search(clause)
    if date and (
        _EN_FIRST_PERSON.match(clause) or _EN_LEADING_DATE.match(clause) or _EN_EVENT.search(clause)
    ):
        return date
    near = _EN_NEAR.search(clause)
    return near if near and _EN_EVENT.search(clause) else None


def _dated_content(clause: str, _match: re.Match[str]) -> str:
    """A leading date goes last: "Tomorrow I fly to Oslo" -> "The user flies to Oslo tomorrow"."""
    when = _EN_LEADING_DATE.match(clause)
    if when:
        return f"{_en_third_person(clause[when.end() :])} {_lower_first(when.group(1))}"
    if _EN_FIRST_PERSON.match(clause):
        return _en_third_person(clause)
    return _en_rest(clause)


_FACT, _PREFERENCE, _DECISION = MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.DECISION
_TASK, _EVENT = MemoryType.TASK, MemoryType.EVENT
_A = _EN_ADV  # short, for the patterns below: adverbs between subject and verb
_EN_RULES: tuple[Rule, ...] = (
    Rule(
        _starts(rf"^(?:i'm|i am)\s+{_A}(?:severely\s+|very\s+|mildly\s+)?allergic\s+to\s+\S"),
        _FACT, topic="allergy", importance=IMPORTANCE_CORE,
    ),
    Rule(
        _starts(rf"^(?:i\s+{_A}have|i've\s+got|i've)\s+(?:an?\s+)?(?:[\w-]+\s+){{0,3}}allerg"),
        _FACT, topic="allergy", importance=IMPORTANCE_CORE,
    ),
    Rule(
        _starts(
            rf"^(?:i'm|i am)\s+{_A}(?:diabetic|celiac|coeliac|epileptic|asthmatic)\b"
            rf"|^i\s+{_A}have\s+(?:type [12] )?(?:diabetes|celiac disease|epilepsy|asthma)\b"
        ),
        _FACT, importance=IMPORTANCE_CORE,
    ),
    Rule(
        _starts(r"^(?:my name is|my name's|(?:please\s+)?call me|i go by)\s+\S"),
        _FACT, topic="name",
    ),
    Rule(
        _starts(rf"^(?:i\s+{_A}live\s+in|(?:i'm|i am)\s+{_A}based\s+in|i\s+{_A}moved\s+to)\s+\S"),
        _FACT, topic="home_city",
    ),
    Rule(
        _starts(
            rf"^(?:i\s+{_A}work\s+(?:at|for)"
            rf"|(?:i'm|i am)\s+{_A}(?:working|employed)\s+(?:at|for))\s+\S"
        ),
        _FACT, topic="employer",
    ),
    Rule(
        _starts(
            rf"^(?:i'm|i am)\s+{_A}(?:a\s+)?(?:strict\s+)?(?:vegetarian|vegan|pescatarian"
            r"|lactose[- ]intolerant|gluten[- ]free|kosher|halal)\b"
        ),
        _FACT, topic="diet",
    ),
    Rule(
        _starts(
            rf"^(?:i\s+{_A}(?:prefer|like|love|enjoy|adore|hate|dislike|detest|can't stand"
            r"|cannot stand|don't like|do not like|don't love|don't enjoy|don't want|do not want"
            rf"|avoid)|(?:i'd|i would)\s+{_A}(?:prefer|rather))\s+(.*)$"
        ),
        _PREFERENCE, unless=_pointing,
    ),
    Rule(_starts(rf"^(?:i'm|i am)\s+{_A}(?:a\s+)?(?:(?:big|huge)\s+)?fan\s+of\s+\S"), _PREFERENCE),
    Rule(
        _starts(r"^my\s+(?:\w+\s+)?favou?rite\s+[\w' -]{1,30}?\s+(?:is|are)\s+\S"), _PREFERENCE
    ),
    Rule(_starts(rf"^i\s+{_A}(?:always|never|usually|only)\s+[a-z]+\s+\S"), _PREFERENCE),
    Rule(
        _starts(
            r"^(?:please\s+)?(?:from now on|going forward|moving forward|in the future|henceforth"
            r"|from here on|always|never|don't ever|do not ever|stop\s+\w+ing|no more)\b"
            r"(?!\s*(?:mind|again|questions?)\b)\W*\w"  # not "never mind", "always!"
        ),
        _PREFERENCE, write=_asked,
    ),
    Rule(
        _starts(
            rf"^(?:we|i)\s+{_A}(?:(?:have|'ve)\s+)?(?:decided|agreed|chose|chosen|settled on"
            rf"|picked)\b|^(?:we're|we are|we'll|we will|we're going to|we are going to)\s+{_A}"
            r"(?:go(?:ing)? with|use|using|switch(?:ing)? to|stick(?:ing)? with|adopt(?:ing)?)\b"
            r"|^(?:we've|we have)\s+(?:decided|agreed|chosen|settled on|picked)\b"
            r"|^let's\s+(?:go with|use|pick|choose|stick with|switch to|adopt)\b"
        ),
        _DECISION,
    ),
    Rule(
        _starts(
            r"^(?:please\s+)?(?:keep|make|answer|reply|respond|write|talk|speak"
            r"|use|give me|be)\b"
        ),
        _PREFERENCE, write=_asked_style, when=topic_in("communication_style", "language"),
    ),
    Rule(_starts(r"^decision\s*[:：-]\s*(.+)$"), _DECISION, write=_decided),
    Rule(
        re.compile(r"\bremind me\s+(\S.*)$", _I).search,
        _TASK, importance=IMPORTANCE_TASK, keyword_topic=False, write=_remind, when=_not_later,
    ),
    # "I have to go now": chit-chat, a shape that states nothing
    Rule(
        _starts(
            r"^i(?:'ve)?\s+(?:\w+\s+)?(?:need to|have to|got to|gotta|must|should)\s+"
            r"(?:go|leave|run|sleep|think|check|ask|log off|head out)"
            r"(?:\s+(?:now|soon|first|about it|about that|it over))?$"
        ),
        None,
    ),
    Rule(
        _starts(
            rf"^i\s+{_A}(?:need to|have to|must|got to|gotta|should)\b|^i've\s+got\s+to\b"
            r"|^(?:don't|do not) forget to\b|^remember to\b"
        ),
        _TASK, importance=IMPORTANCE_TASK, keyword_topic=False, write=_task,
    ),
    Rule(
        _dated,
        _EVENT, importance=IMPORTANCE_TASK, keyword_topic=False, task_if=_EN_TASK,
        write=_dated_content,
    ),
    Rule(
        _starts(rf"^i\s+{_A}(?:have|own)\s+(?:a|an|one|two|three|\d+)\s+"),
        _FACT, topic="pet", when=topic_in("pet"),
    ),
    Rule(_starts(rf"^i\s+{_A}speak\s+\S"), _FACT, topic="language", when=topic_in("language")),
    Rule(
        _starts(
            rf"^(?:i\s+{_A}(?:use|code in|program in|write|run)"
            rf"|(?:i'm|i am)\s+{_A}using)\s+\S"
        ),
        _FACT, when=topic_in(),
    ),
    Rule(_starts(r"^(?:i'm|i am)\s+(?:in|on)\s+.*\btime\s?zone\b"), _FACT, topic="timezone"),
    Rule(
        _starts(
            r"^my\s+(?!bad\b|pleasure\b|apologies\b|god\b|goodness\b)[\w' -]{1,30}?"
            r"\s+(?:is|are)\s+\S"
        ),
        _FACT,
    ),
    Rule(_starts(rf"^(?:i'm|i am)\s+{_A}(?:a|an)\s+(?!bit\b|little\b|lot\b)\w"), _FACT),
    Rule(_starts(rf"^(?:i'm|i am)\s+{_A}from\s+\S"), _FACT),
)  # fmt: skip
"""What each kind of English statement looks like, in order: the first that fits wins."""


def en_rules(clause: str) -> Found | None:
    """What an English clause states (first rule that matches), or None."""
    return first_found(_EN_RULES, clause, _en_third_person)


def en_clauses(sentence: str) -> list[str]:
    """An English sentence's clauses; "and live in X" takes the previous subject."""
    clauses: list[str] = []
    subject = ""
    for piece in _EN_SPLIT.split(sentence):
        clause = _EN_MARKERS.sub("", TERMINAL.sub("", piece.strip())).strip()
        if not clause:
            continue
        own = _EN_SUBJECT.match(EN_LEADING_HEDGE.sub("", clause))
        if own:
            subject = own.group()
        elif subject and clauses and _EN_CARRY.match(clause):
            clause = f"{subject} {clause}"
        clauses.append(clause)
    return clauses
