import hashlib
import json
from pathlib import Path

import pytest

from recalld_server.api.auth import Authenticator
from recalld_server.domain.core.errors import (
    InvalidArgumentError,
    UnauthenticatedError,
)


def _keys(tmp_path: Path, entries: list[dict[str, object]]) -> Path:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"keys": entries}))
    return path


def test_open_access_takes_tenant_from_metadata() -> None:
    auth = Authenticator.open_access()
    assert auth.authenticate({}).tenant_id == "default"
    assert auth.authenticate({"x-recalld-tenant": "acme"}).tenant_id == "acme"
    with pytest.raises(InvalidArgumentError):
        auth.authenticate({"x-recalld-tenant": "a b"})


def test_keys_resolve_tenant_role_and_scopes(tmp_path: Path) -> None:
    digest = hashlib.sha256(b"hashed-key").hexdigest()
    auth = Authenticator.from_file(
        _keys(
            tmp_path,
            [
                {"key": "k1", "tenant": "acme", "role": "reader", "scopes": ["bot"]},
                {"key_sha256": digest, "tenant": "globex"},
            ],
        )
    )
    reader = auth.authenticate({"authorization": "Bearer k1"})
    assert (reader.tenant_id, reader.role, reader.may_write()) == ("acme", "reader", False)
    assert reader.may_use_scope("bot") and reader.may_use_scope("")
    assert not reader.may_use_scope("other")
    assert auth.authenticate({"x-api-key": "hashed-key"}).tenant_id == "globex"
    assert (
        auth.authenticate({"authorization": "Bearer k1", "x-recalld-tenant": "acme"}).tenant_id
        == "acme"
    )
    for metadata in (
        {},
        {"authorization": "Bearer nope"},
        {"authorization": "Basic k1"},
        {"authorization": "Bearer k1", "x-recalld-tenant": "globex"},  # conflicting tenant
    ):
        with pytest.raises(UnauthenticatedError):
            auth.authenticate(metadata)


@pytest.mark.parametrize(
    "metadata",
    [
        [("authorization", "Bearer k1"), ("authorization", "Bearer k2")],
        [("authorization", "Bearer k2"), ("authorization", "Bearer k1")],  # not "last wins"
        [("authorization", "Bearer k1"), ("authorization", "Bearer k1")],
        [("authorization", "Bearer k1"), ("x-api-key", "k2")],
        [("x-api-key", "k1"), ("x-api-key", "k1")],
        [("authorization", "Bearer k1"), ("x-recalld-tenant", "acme"), ("x-recalld-tenant", "b")],
    ],
)
def test_ambiguous_credentials_are_refused(tmp_path: Path, metadata: list[tuple[str, str]]) -> None:
    auth = Authenticator.from_file(
        _keys(tmp_path, [{"key": "k1", "tenant": "acme"}, {"key": "k2", "tenant": "globex"}])
    )
    with pytest.raises(UnauthenticatedError, match="ambiguous"):
        auth.authenticate(metadata)


def test_open_access_refuses_two_tenants() -> None:
    auth = Authenticator.open_access()
    with pytest.raises(UnauthenticatedError):
        auth.authenticate([("x-recalld-tenant", "a"), ("x-recalld-tenant", "b")])
    assert (
        auth.authenticate([("x-recalld-tenant", "a"), ("x-recalld-tenant", "a")]).tenant_id == "a"
    )


@pytest.mark.parametrize(
    "entry",
    [
        {"tenant": "acme"},
        {"key": "k", "tenant": "bad tenant"},
        {"key": "k", "tenant": "acme", "role": "root"},
    ],
)
def test_bad_keys_file_is_refused(tmp_path: Path, entry: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Authenticator.from_file(_keys(tmp_path, [entry]))
