from recalld_server.domain.core.ids import ID_LENGTH, looks_like_id, new_id


def test_ids_sort_by_time_and_are_unique() -> None:
    earlier = [new_id(1_700_000_000_000) for _ in range(50)]
    later = new_id(1_700_000_000_001)
    assert len(set(earlier)) == 50
    assert all(e < later for e in earlier)
    assert all(len(i) == ID_LENGTH and looks_like_id(i) for i in earlier)


def test_looks_like_id_rejects_garbage() -> None:
    for bad in [
        "",
        "01ARZ3NDEKTSV4RRFFQ69G5FA",
        'x" or 1==1 or id == "abcdefghijklmnop',
        "01arz3ndektsv4rrffq69g5fav",
        "01ARZ3NDEKTSV4RRFFQ69G5FAU",
    ]:
        assert not looks_like_id(bad), bad
