"""The topic vocabulary of the rule extractor, and the topic a text is about."""

from __future__ import annotations

import re

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

CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _keyword_pattern(word: str) -> str:
    if CJK.search(word):
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
