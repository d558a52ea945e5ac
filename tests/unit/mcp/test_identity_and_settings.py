"""Who an MCP call acts for, and which settings the facade refuses (no recalld needed)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import grpc
import pytest

from recalld_client import FieldViolation, RecalldError
from recalld_mcp.errors import argument_name, recalld_error_result
from recalld_mcp.identity import Caller, Identity, IdentityError, KeyUsers
from recalld_mcp.settings import SettingsError, is_loopback_host, load_settings


def test_stdio_uses_the_process_key_and_fixed_user() -> None:
    identity = Identity(api_key="k", user_id="alice")
    assert identity.caller(None) == Caller("k", "", "alice")
    assert Identity(tenant="dev", user_id="a").caller(None) == Caller("", "dev", "a")


def test_http_takes_the_bearer_key_and_the_gateway_header() -> None:
    identity = Identity(user_header="X-Recalld-User", require_key=True)
    caller = identity.caller({"authorization": "Bearer  s3cret ", "x-recalld-user": "bob"})
    assert caller == Caller("s3cret", "", "bob")
    with pytest.raises(IdentityError, match="needs an API key"):
        identity.caller({"x-recalld-user": "bob"})
    with pytest.raises(IdentityError, match="needs an API key"):
        identity.caller({"authorization": "Basic abc"})


def test_keyless_http_falls_back_to_the_process_identity_only_when_allowed() -> None:
    identity = Identity(tenant="dev", user_id="alice")
    assert identity.caller({}) == Caller("", "dev", "alice")


def test_key_users_bind_a_key_to_its_user_whatever_the_headers(tmp_path: Path) -> None:
    path = tmp_path / "users.json"
    digest = hashlib.sha256(b"k2").hexdigest()
    path.write_text(
        json.dumps({"keys": [{"key": "k1", "user": "alice"}, {"key_sha256": digest, "user": "bo"}]})
    )
    identity = Identity(key_users=KeyUsers.load(path), user_header="X-User")
    assert identity.caller({"Authorization": "Bearer k1", "X-User": "bo"}).user_id == "alice"
    assert identity.caller({"Authorization": "Bearer k2"}).user_id == "bo"
    with pytest.raises(IdentityError, match="not bound"):
        identity.caller({"Authorization": "Bearer k3"})
    with pytest.raises(IdentityError, match="not bound"):
        identity.caller({})


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ("[]", "expected"),
        ('{"keys": []}', "expected"),
        ('{"keys": [{"key": "k"}]}', "has no user"),
        ('{"keys": [{"user": "u"}]}', "no key"),
        ('{"keys": [{"key_sha256": "zz", "user": "u"}]}', "not hex"),
        ('{"keys": [{"key_sha256": "abcd", "user": "u"}]}', "not a SHA-256"),
        ("{not json", "Expecting"),
    ],
)
def test_a_broken_key_users_file_is_refused(tmp_path: Path, document: str, problem: str) -> None:
    path = tmp_path / "users.json"
    path.write_text(document)
    with pytest.raises(ValueError, match=problem):
        KeyUsers.load(path)


def test_the_user_argument_is_refused_unless_allowed() -> None:
    fixed = Identity(user_id="alice")
    caller = fixed.caller(None)
    assert fixed.user_for(caller, None) == "alice"
    with pytest.raises(IdentityError, match="fixed by the operator"):
        fixed.user_for(caller, "bob")
    open_ = Identity(allow_user_argument=True)
    assert open_.user_for(open_.caller(None), "bob") == "bob"
    with pytest.raises(IdentityError, match="pass user_id"):
        open_.user_for(open_.caller(None), None)


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        ([], "no user"),
        (["--http"], "no way to tell the user"),
        (["--http", "--host", "0.0.0.0", "--allow-keyless", "--user", "a"], "--allow-keyless"),
        (["--user", "a", "--user-header", "X"], "for --http"),
        (["--http", "--user", "a", "--path", "mcp"], "--path"),
        (["--http", "--user", "a", "--port", "70000"], "--port"),
        (["--user", "a", "--tenant", "t"], "not both"),
    ],
)
def test_unsafe_or_incomplete_settings_are_refused(argv: list[str], problem: str) -> None:
    environ = {"RECALLD_API_KEY": "k"} if "--tenant" in argv else {}
    with pytest.raises(SettingsError, match=problem):
        load_settings(argv, environ)


def test_settings_read_the_environment_and_flags_win() -> None:
    environ = {"RECALLD_ADDR": "db:1", "RECALLD_MCP_USER": "env-user", "RECALLD_API_KEY": "k"}
    settings = load_settings(["--user", "flag-user"], environ)
    assert settings.address == "db:1" and settings.identity.user_id == "flag-user"
    assert settings.identity.api_key == "k" and not settings.http
    http = load_settings(["--http", "--user-header", "X-U"], {})
    assert http.identity.require_key and http.host == "127.0.0.1"
    assert not load_settings(["--http", "--user", "a", "--allow-keyless"], {}).identity.require_key


def test_loopback_hosts() -> None:
    assert all(is_loopback_host(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "127.1.2.3"))
    assert not any(is_loopback_host(h) for h in ("0.0.0.0", "10.0.0.1", "example.com", "::"))


def test_recalld_errors_become_results_an_agent_can_act_on() -> None:
    invalid = recalld_error_result(
        RecalldError(
            grpc.StatusCode.INVALID_ARGUMENT,
            "memories[0].content: too long",
            "INVALID_FIELD",
            (FieldViolation("memories[0].content", "is too long", "TOO_LONG"),),
        )
    )
    assert invalid.is_error
    details = invalid.structured_content["error"]
    assert details["fields"] == [{"argument": "content", "problem": "is too long"}]
    assert "Fix the arguments" in details["message"]
    busy = recalld_error_result(
        RecalldError(grpc.StatusCode.RESOURCE_EXHAUSTED, "rate limited", retry_delay_s=2.5)
    )
    busy_details = busy.structured_content["error"]
    assert busy_details["retry_after_s"] == 2.5 and "Retry after 2.5 s" in busy_details["message"]
    stale = recalld_error_result(RecalldError(grpc.StatusCode.ABORTED, "etag mismatch"))
    assert "etag mismatch. The memory changed" in stale.structured_content["error"]["message"]


def test_request_fields_are_named_as_tool_arguments() -> None:
    assert argument_name("memories[0].content") == "content"
    assert argument_name("memory.tags[3]") == "tags[3]"
    assert argument_name("messages[2].content") == "messages[2].content"
    assert argument_name("top_k") == "top_k"
