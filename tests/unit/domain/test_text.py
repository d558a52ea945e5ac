from recalld_server.domain.text import content_hash, estimate_tokens, normalise


def test_normalise_folds_case_width_and_space() -> None:
    full_width = "\uff21\uff2d\uff25\uff32\uff29\uff23\uff21\uff2e\uff2f"  # AMERICANO
    assert normalise(f"  Prefers   {full_width}\n") == "prefers americano"
    assert content_hash("I like tea") == content_hash("i  LIKE tea ")
    assert content_hash("I like tea") != content_hash("I like coffee")


def test_token_estimate_counts_cjk_per_character() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("我喜欢喝咖啡") == 6
    assert estimate_tokens("I like coffee") == 4  # 3 short words x 1.3
    mixed = estimate_tokens("我们用PostgreSQL数据库")
    assert 6 <= mixed <= 9
    assert estimate_tokens("SO-88231!") == 5  # word, dash, number, bang
