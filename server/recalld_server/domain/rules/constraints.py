"""Core facts that rule things out, and the memories that would break them.

An embedding cannot read "The user is vegetarian" against "The user loves a
rare steak" (cosine 0.35, below unrelated pairs), so consolidation's offline
contradiction report would never see it. These rules know a few kinds of core
fact that exclude something — diets, allergies, abstinence, family status,
living alone, inability — and what a memory breaking each one says, in English
and Chinese. They report (never change) a pair for a person to look at; the
optional judge reads the rest.

Written from the kinds of constraints users state, checked on the training half
of the labelled pairs and reported on the test half (benchmarks/README.md).
A memory that avoids, plans, learns or speaks of someone else ("avoids prawns",
"is taking driving lessons", "the neighbour's cat") breaks nothing.
"""

from __future__ import annotations

import dataclasses
import re

from recalld_server.domain.core.text import normalise


def _words(*alternatives: str) -> str:
    """English words as whole words (with plurals), Chinese as they are."""
    latin = [a for a in alternatives if a.isascii()]
    cjk = [a for a in alternatives if not a.isascii()]
    parts = []
    if latin:
        parts.append(r"\b(?:" + "|".join(latin) + r")(?:e?s)?\b")
    if cjk:
        parts.append("|".join(cjk))
    return "|".join(parts)


@dataclasses.dataclass(frozen=True, slots=True)
class Constraint:
    """One kind of core fact that rules something out.

    Attributes:
        name: What it rules out (reported with the pair).
        core: Wording of a core memory stating the constraint.
        breaks: Wording of a memory that would break it.
        unless: Wording that makes such a memory compatible after all.
    """

    name: str
    core: re.Pattern[str]
    breaks: re.Pattern[str]
    unless: re.Pattern[str] | None = None


def _constraint(name: str, core: str, breaks: str, unless: str = "") -> Constraint:
    return Constraint(
        name,
        re.compile(core),
        re.compile(breaks),
        re.compile(unless) if unless else None,
    )


_MEAT = _words(
    "steak", "beef", "pork", "bacon", "ham", "chicken", "lamb", "mutton", "duck", "turkey",
    "sausage", "burger", "meatball", "veal", "venison", "salami", "pepperoni", "brisket",
    "ribs", "kebab", "牛排", "牛肉", "猪肉", "鸡肉", "鸡腿", "鸭", "羊肉", "羊肉串", "培根",
    "火腿", "叉烧", "红烧肉", "烤鸭", "排骨", "腊肉", "香肠", "肉串", "肉夹馍", "汉堡",
)  # fmt: skip
_FISH = _words(
    "fish", "salmon", "tuna", "cod", "prawn", "shrimp", "crab", "lobster", "oyster",
    "mussel", "sushi", "sashimi", "鱼", "三文鱼", "虾", "蟹", "螃蟹", "龙虾", "生蚝", "寿司",
)  # fmt: skip
_ANIMAL_PRODUCTS = _words(
    "egg", "milk", "cheese", "butter", "yoghurt", "yogurt", "honey", "cream",
    "鸡蛋", "蛋", "牛奶", "奶酪", "芝士", "黄油", "酸奶", "蜂蜜",
)  # fmt: skip
_PORK = _words(
    "pork", "bacon", "ham", "sausage", "prosciutto", "pepperoni", "salami",
    "猪肉", "培根", "火腿", "叉烧", "红烧肉", "排骨", "腊肉", "猪",
)  # fmt: skip
_ALCOHOL = _words(
    "beer", "wine", "whisky", "whiskey", "vodka", "gin", "rum", "tequila", "ipa", "pint",
    "lager", "ale", "cocktail", "champagne", "prosecco", "sake", "baijiu", "drunk",
    "hangover", "啤酒", "红酒", "白酒", "葡萄酒", "二锅头", "茅台", "黄酒", "喝酒", "干杯",
    "喝醉", "鸡尾酒", "威士忌",
)  # fmt: skip
_CAFFEINE = _words(
    "coffee", "espresso", "latte", "americano", "cappuccino", "flat white", "cold brew",
    "red bull", "energy drink", "咖啡", "美式", "拿铁", "卡布奇诺", "红牛", "浓缩",
)  # fmt: skip
_SMOKING = _words(
    "smokes", "smoke", "smoking", "cigarette", "cigar", "vape", "vaping", "nicotine",
    "pack a day", "抽烟", "吸烟", "香烟", "烟瘾", "尼古丁", "一包中华", "电子烟",
)  # fmt: skip
_DAIRY = _words(
    "milk", "cheese", "ice cream", "cream", "milkshake", "latte", "yoghurt", "yogurt",
    "牛奶", "纯牛奶", "奶酪", "芝士", "冰淇淋", "奶昔", "酸奶",
)  # fmt: skip
_PARTNER = _words(
    "wife", "husband", "boyfriend", "girlfriend", "fiancé", "fiancée", "fiance", "spouse",
    "丈夫", "老公", "妻子", "老婆", "女朋友", "男朋友", "女友", "男友", "未婚妻", "未婚夫",
)  # fmt: skip
_CHILD = _words(
    "daughter", "son", "kid", "child", "children", "baby", "toddler",
    "女儿", "儿子", "孩子", "宝宝", "闺女",
)  # fmt: skip
_SIBLING = _words(
    "brother", "sister", "sibling", "哥哥", "姐姐", "弟弟", "妹妹", "兄弟", "姐妹",
)  # fmt: skip
_PET = _words(
    "dog", "puppy", "cat", "kitten", "hamster", "rabbit", "parrot", "goldfish",
    "狗", "猫", "布偶", "金毛", "泰迪", "柯基", "仓鼠", "兔子", "鹦鹉",
)  # fmt: skip
_FLATMATE = _words("flatmate", "roommate", "housemate", "室友", "合租")

_OWN = r"(?:\b(?:the user'?s|user'?s|her|his|their|my)\b|用户的|用户家|他的|她的|家里)"
"""A possessive: the memory speaks of the user's own relative or pet."""

_NOT_AFFIRMED = re.compile(
    r"\b(?:avoid(?:s|ed|ing)?|never|doesn't|don't|didn't|won't|isn't|refus(?:es|ed)"
    r"|quit|gave up|giving up|plan(?:s|ning)? to|wants? to|would like|hopes? to|lessons?"
    r"|learning|signed up|applying|videos?|pictures?|neighbou?r'?s?|friend'?s|cousin'?s?"
    r"|colleague'?s|anti-\w+|free\b|-free|decaf\w*|alcohol-free|non-alcoholic|substitute"
    r"|fake|vegan \w+|plant-based|meat-free|veggie \w+|stuck to|sticks to|instead of)"
    r"|避开|不吃|不喝|不抽|没吃|没喝|戒|打算|计划|想要|准备|学车|学开车|学游泳|在学|学习|邻居|朋友家"
    r"|同事家|反对|无醇|无糖"
    r"|素|替代|表弟|表妹|表哥|表姐|堂"
)
"""A memory with these does not affirm what it mentions (it avoids, plans, learns, or
speaks of someone else)."""

CONSTRAINTS = (
    _constraint(
        "meat",
        r"\b(?:vegetarian|vegan)\b|素食|吃素|不吃肉",
        _MEAT + "|" + _FISH,
    ),
    _constraint("meat", r"\bpescatarian\b|只吃鱼", _MEAT),
    _constraint("animal products", r"\bvegan\b|纯素", _ANIMAL_PRODUCTS),
    _constraint(
        "pork",
        r"\b(?:kosher|halal)\b|(?:doesn't|does not|never|don't) eat pork|no pork|不吃猪|清真",
        _PORK,
    ),
    _constraint("shellfish", r"\bkosher\b", _words("prawn", "shrimp", "crab", "lobster")),
    _constraint(
        "alcohol",
        r"(?:doesn't|does not|don't|never|no longer) drinks?(?! (?:coffee|tea|milk|caffeine))"
        r"|\bteetotal\b|\bsober\b|no alcohol|不喝酒|滴酒不沾|戒酒|不沾酒",
        _ALCOHOL,
    ),
    _constraint(
        "caffeine",
        r"(?:doesn't|does not|don't|never|no longer) drinks? coffee|no caffeine|caffeine-free"
        r"|avoids caffeine|不喝咖啡|不喝含咖啡因|戒咖啡|不碰咖啡",
        _CAFFEINE,
    ),
    _constraint(
        "smoking",
        r"(?:doesn't|does not|don't|never|no longer) smokes?|non-smoker|从不抽烟|不抽烟|不吸烟"
        r"|戒烟|从不吸烟",
        _SMOKING,
    ),
    _constraint(
        "dairy",
        r"lactose[- ]intolerant|dairy-free|乳糖不耐",
        _DAIRY,
        r"\b(?:oat|almond|soy|soya|rice|coconut|lactose-free) (?:milk|yoghurt|yogurt|cream)"
        r"|燕麦奶|豆奶|杏仁奶|椰奶|无乳糖",
    ),
    _constraint(
        "spicy food",
        r"(?:doesn't|does not|can't|cannot|don't) eat spicy|不吃辣|吃不了辣|不能吃辣",
        r"\b(?:spicy|chill?i|chilli|hotpot|hot pot|sichuan|szechuan|vindaloo|jalape\w*|sriracha)"
        r"\b|麻辣|辣椒|火锅|川菜|湘菜|水煮鱼|辣子鸡",
        r"\bmild\b|not spicy|清淡|微辣|不辣|鸳鸯",
    ),
    _constraint(
        "an office",
        r"fully remote|works? (?:from home|remotely) full[- ]time|remote with no office"
        r"|全职在家|全职远程|在家办公|远程办公",
        r"\b(?:to|at|in|into) the office\b|company building|office every|commutes? to work"
        r"|到公司|去公司|公司打卡|办公室上班|坐班",
        r"once a year|occasionally|party|offsite|年会|偶尔",
    ),
    _constraint(
        "a job",
        r"\bunemployed\b|\bretired\b|no income|\bjobless\b|已经?退休|没有工作|失业|无业",
        r"\b(?:boss|salary|payslip|colleagues?|his manager|her manager|their manager"
        r"|quarterly (?:review|results)|earns)\b|老板|工资|上班|汇报|同事|打卡|年薪",
        r"volunteer|applying|interview|part-time|used to|former|retired from|志愿|兼职|以前",
    ),
    _constraint(
        "a car",
        r"(?:doesn't|does not|don't) (?:own|have) a car|\bhas no car\b|no car\b|没有车|没车",
        _OWN + r".{0,12}(?:\bcar\b|volvo|toyota|honda|bmw|audi|tesla|ford|volkswagen|mercedes"
        r"|nissan|kia|hyundai|特斯拉|宝马|奥迪|丰田|本田|大众|比亚迪|车)",
        r"rental|hire car|taxi|租车|打车",
    ),
    _constraint(
        "an iPhone",
        r"uses? an android|android phone|only (?:uses )?android|不用苹果|只用安卓|安卓手机",
        r"\biphone\b|苹果手机|icloud",
    ),
    _constraint(
        "Apple products",
        r"(?:doesn't|does not|don't|never) (?:use|buy) apple|不用苹果|不买苹果",
        r"\b(?:iphone|ipad|macbook|imac|mac mini|macos|icloud|airpods|apple watch)\b"
        r"|苹果手机|苹果电脑",
    ),
    _constraint(
        "other systems",
        r"linux exclusively|only (?:uses )?linux|只用linux",
        r"\b(?:macbook|macos|imac|windows 1[01]|windows laptop)\b",
    ),
    _constraint(
        "their mother",
        r"(?:mother|mum|mom) (?:has )?(?:passed away|died)|(?:母亲|妈妈)(?:已经)?(?:去世|过世)",
        _OWN + r".{0,6}(?:mother|mum|mom|母亲|妈妈|老妈)",
        r"grave|memorial|anniversary|remember|memory of|late mother|扫墓|忌日|纪念|想念|遗物",
    ),
    _constraint(
        "their father",
        r"(?:father|dad) (?:has )?(?:passed away|died)|(?:父亲|爸爸)(?:已经)?(?:去世|过世)",
        _OWN + r".{0,6}(?:father|dad|父亲|爸爸|老爸)",
        r"grave|memorial|anniversary|remember|memory of|late father|扫墓|忌日|纪念|想念|遗物",
    ),
    _constraint(
        "a partner",
        r"\bsingle\b|not married|unmarried|never married|not dating|单身|没结婚|未婚|还没结婚",
        _OWN + r".{0,12}(?:" + _PARTNER + r")",
    ),
    _constraint(
        "children",
        r"(?:no|doesn't have any|does not have any|has no) (?:children|kids)\b|childless"
        r"|没有孩子|没孩子|不要孩子|丁克",
        _OWN + r".{0,12}(?:" + _CHILD + r")",
    ),
    _constraint(
        "siblings",
        r"\bonly child\b|no (?:brothers|sisters|siblings)|独生子|独生女|独生",
        _OWN + r".{0,12}(?:" + _SIBLING + r")",
    ),
    _constraint(
        "pets",
        r"(?:no|doesn't have any|does not have any|has no|never had any) pets?\b"
        r"|没有宠物|没养过宠物|从没养过|不养宠物",
        r"(?:" + _OWN + r".{0,12}(?:" + _PET + r"))|(?:feed|walk)s? the (?:dog|cat)|养了|养的",
    ),
    _constraint(
        "living with others",
        r"\blives alone\b|一个人住|独居",
        _FLATMATE,
    ),
    _constraint(
        "driving",
        r"can(?:no|')t drive|doesn't drive|does not drive|no driving licen[cs]e"
        r"|doesn't have a driving licen[cs]e|不会开车|没有驾照|没驾照",
        r"\b(?:drove|drives|driving to|took the wheel|road trip)\b|开车去|开车到|自驾|开了",
    ),
    _constraint(
        "swimming",
        r"can(?:no|')t swim|doesn't know how to swim|不会游泳",
        r"\b(?:swam|swims|triathlons?|open-water|scuba|snorkell?ing)\b|横渡|游了|潜水|冬泳",
    ),
    _constraint(
        "flying",
        r"(?:never|won't|doesn't|does not) (?:fly|flies|take planes)|afraid of flying"
        r"|从不坐飞机|不坐飞机",
        r"\b(?:flew|flies to|flying to|flight to|boarded)\b|飞一趟|坐飞机去|飞到|航班",
    ),
    _constraint(
        "glasses",
        r"perfect eyesight|20/20 vision|不近视|视力很好|眼睛很好",
        r"\b(?:glasses|contact lenses|short-sighted|near-sighted)\b|近视|眼镜",
    ),
)
"""What each kind of core fact rules out. `sunglasses` is not glasses: whole words."""

_SUNGLASSES = re.compile(r"sunglasses|墨镜|太阳镜")

_ALLERGY = re.compile(
    r"allergic to (?:the )?([a-z][a-z -]*)|([a-z][a-z-]*) allergy|对(.{1,6}?)过敏"
)

_ALLERGENS = {
    "nut": _words(
        "nut", "peanut", "almond", "walnut", "cashew", "hazelnut", "pistachio", "pecan",
        "snickers", "nutella", "satay", "praline", "marzipan", "peanut butter",
        "花生", "坚果", "核桃", "杏仁", "腰果", "榛子", "开心果", "沙爹",
    ),
    "penicillin": _words(
        "penicillin", "amoxicillin", "ampicillin", "augmentin", "青霉素", "阿莫西林", "氨苄",
    ),
    "cat": _words("cat", "kitten", "猫", "布偶", "英短", "橘猫"),
    "dog": _words("dog", "puppy", "狗", "金毛", "泰迪", "柯基"),
    "shellfish": _words("shellfish", "prawn", "shrimp", "crab", "lobster", "虾", "蟹", "海鲜"),
    "seafood": _words(
        "seafood", "fish", "salmon", "tuna", "prawn", "shrimp", "crab", "lobster", "sushi",
        "海鲜", "鱼", "虾", "蟹", "三文鱼",
    ),
    "gluten": _words("bread", "pasta", "gluten", "wheat", "面包", "面条", "小麦"),
    "egg": _words("egg", "omelette", "鸡蛋", "蛋"),
    "milk": _DAIRY,
    "pollen": _words("pollen", "花粉"),
}  # fmt: skip
"""What someone allergic to each thing must not be eating, taking or living with."""

_ALLERGEN_NAMES = {
    "nut": ("nut", "peanut", "tree nut", "坚果", "花生"),
    "penicillin": ("penicillin", "青霉素"),
    "cat": ("cat", "猫", "猫毛"),
    "dog": ("dog", "狗", "狗毛"),
    "shellfish": ("shellfish", "prawn", "shrimp", "虾", "蟹"),
    "seafood": ("seafood", "fish", "海鲜", "鱼"),
    "gluten": ("gluten", "wheat", "麸质", "小麦"),
    "egg": ("egg", "鸡蛋"),
    "milk": ("milk", "dairy", "牛奶", "乳制品"),
    "pollen": ("pollen", "hay fever", "花粉"),
}


def _allergens(core: str) -> list[str]:
    """The allergen kinds a core memory names ("allergic to peanuts", "对猫毛过敏")."""
    found = []
    for match in _ALLERGY.finditer(core):
        named = next(group for group in match.groups() if group).strip()
        for kind, names in _ALLERGEN_NAMES.items():
            if any(name in named for name in names):
                found.append(kind)
    return found


_CITIES = {
    "london": ("london", "伦敦"),
    "manchester": ("manchester", "曼彻斯特"),
    "leeds": ("leeds", "利兹"),
    "birmingham": ("birmingham", "伯明翰"),
    "bristol": ("bristol", "布里斯托"),
    "liverpool": ("liverpool", "利物浦"),
    "glasgow": ("glasgow", "格拉斯哥"),
    "oxford": ("oxford", "牛津"),
    "cambridge": ("cambridge", "剑桥"),
    "edinburgh": ("edinburgh", "爱丁堡"),
    "dublin": ("dublin", "都柏林"),
    "paris": ("paris", "巴黎"),
    "berlin": ("berlin", "柏林"),
    "munich": ("munich", "慕尼黑"),
    "amsterdam": ("amsterdam", "阿姆斯特丹"),
    "madrid": ("madrid", "马德里"),
    "rome": ("rome", "罗马"),
    "new york": ("new york", "纽约"),
    "boston": ("boston", "波士顿"),
    "chicago": ("chicago", "芝加哥"),
    "san francisco": ("san francisco", "旧金山"),
    "seattle": ("seattle", "西雅图"),
    "los angeles": ("los angeles", "洛杉矶"),
    "toronto": ("toronto", "多伦多"),
    "vancouver": ("vancouver", "温哥华"),
    "sydney": ("sydney", "悉尼"),
    "melbourne": ("melbourne", "墨尔本"),
    "tokyo": ("tokyo", "东京"),
    "osaka": ("osaka", "大阪"),
    "seoul": ("seoul", "首尔"),
    "singapore": ("singapore", "新加坡"),
    "hong kong": ("hong kong", "香港"),
    "beijing": ("beijing", "北京"),
    "shanghai": ("shanghai", "上海"),
    "shenzhen": ("shenzhen", "深圳"),
    "guangzhou": ("guangzhou", "广州"),
    "hangzhou": ("hangzhou", "杭州"),
    "chengdu": ("chengdu", "成都"),
    "nanjing": ("nanjing", "南京"),
    "wuhan": ("wuhan", "武汉"),
    "xi'an": ("xi'an", "xian", "西安"),
    "chongqing": ("chongqing", "重庆"),
    "suzhou": ("suzhou", "苏州"),
    "tianjin": ("tianjin", "天津"),
    "xiamen": ("xiamen", "厦门"),
    "qingdao": ("qingdao", "青岛"),
}
"""Cities by one name, with their English and Chinese spellings."""

_LIVES_IN = re.compile(
    r"\b(?:lives|is based|lives and works|works) in |住在|在(?=.{2,4}(?:工作|生活))|家在"
)
_EVERY_DAY = re.compile(
    r"\b(?:daily|every (?:day|weekday|morning)|commutes?|metro|subway|underground|office)\b"
    r"|每天|通勤|上班|地铁|办公室"
)


def _cities(text: str) -> set[str]:
    return {
        city
        for city, names in _CITIES.items()
        if any(
            re.search(r"\b" + re.escape(name) + r"\b", text) if name.isascii() else name in text
            for name in names
        )
    }


@dataclasses.dataclass(frozen=True, slots=True)
class CoreRules:
    """What one core memory rules out, read once and checked against many memories."""

    constraints: tuple[Constraint, ...]
    allergens: tuple[str, ...]
    home: frozenset[str]
    """Cities the core places the user's home or work in."""


def core_rules(core: str) -> CoreRules | None:
    """What `core` rules out; None when nothing (most memories)."""
    text = normalise(core)
    rules = CoreRules(
        tuple(c for c in CONSTRAINTS if c.core.search(text)),
        tuple(_allergens(text)),
        frozenset(_cities(text)) if _LIVES_IN.search(text) else frozenset(),
    )
    return rules if rules.constraints or rules.allergens or rules.home else None


def affirmed(other: str) -> str | None:
    """The text to check a memory by, or None when it avoids, plans, learns or tells of others."""
    text = normalise(other)
    return None if _NOT_AFFIRMED.search(text) else _SUNGLASSES.sub(" ", text)


def broken_by(rules: CoreRules, other_text: str) -> list[str]:
    """What of `rules` a memory breaks, given its `affirmed` text (names; [] for none)."""
    broken = [
        f"allergy to {kind}" for kind in rules.allergens if re.search(_ALLERGENS[kind], other_text)
    ]
    if rules.home and _EVERY_DAY.search(other_text):
        there = _cities(other_text)
        if there and not rules.home & there:
            broken.append("living elsewhere")
    for constraint in rules.constraints:
        if constraint.breaks.search(other_text) and not (
            constraint.unless and constraint.unless.search(other_text)
        ):
            broken.append(constraint.name)
    return list(dict.fromkeys(broken))


def broken_constraints(core: str, other: str) -> list[str]:
    """The constraints `core` states that `other` would break (names; [] for none)."""
    rules = core_rules(core)
    text = affirmed(other)
    return [] if rules is None or text is None else broken_by(rules, text)
