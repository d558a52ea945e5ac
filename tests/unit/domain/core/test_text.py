from recalld_server.domain.core.text import content_hash, estimate_tokens, normalise, token_cost


def test_normalise_folds_case_width_and_space() -> None:
    full_width = "\uff21\uff2d\uff25\uff32\uff29\uff23\uff21\uff2e\uff2f"  # AMERICANO
    assert normalise(f"  Prefers   {full_width}\n") == "prefers americano"
    assert content_hash("I like tea") == content_hash("i  LIKE tea ")
    assert content_hash("I like tea") != content_hash("I like coffee")


def test_token_estimate_counts_cjk_words_digits_and_punctuation() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("我喜欢喝咖啡") == 7  # 6 CJK characters x 1.2
    assert estimate_tokens("I like coffee") == 4  # 1.1 + 1.1 + 6 letters / 4
    assert estimate_tokens("SO-88231!") == 6  # word 1.1, dash 1, 5 digits 2.5, bang 1
    mixed = estimate_tokens("我们用PostgreSQL数据库")
    assert 8 <= mixed <= 10


def test_token_cost_bounds_the_estimate_of_a_concatenation() -> None:
    lines = ["- I like coffee\n", "- 我喜欢喝咖啡\n", "- order SO-88231 shipped\n"]
    assert estimate_tokens("".join(lines)) <= sum(token_cost(line) for line in lines)
