"""What the server does with each category, server-wide and per tenant."""

from __future__ import annotations

import dataclasses
import json
import types
from collections.abc import Mapping
from typing import Any

from recalld_server.domain.core.sensitive_data import Action, Category
from recalld_server.domain.sensitive.categories import DEFAULT_ACTIONS, GROUPS

Actions = Mapping[Category, Action]


@dataclasses.dataclass(frozen=True, slots=True)
class SensitiveDataPolicy:
    """The server's action per category, and the tenants that override some of them.

    Attributes:
        actions: The server-wide action of every category.
        tenants: Per tenant, the categories whose action differs from the server's.
    """

    actions: Actions = dataclasses.field(
        default_factory=lambda: types.MappingProxyType(dict(DEFAULT_ACTIONS))
    )
    tenants: Mapping[str, Actions] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({})
    )

    def for_tenant(self, tenant_id: str) -> Actions:
        """The action of every category for one tenant."""
        override = self.tenants.get(tenant_id)
        if not override:
            return self.actions
        return {**self.actions, **override}

    def allows_everything(self) -> bool:
        """True when no tenant masks or refuses anything (detection can be skipped)."""
        return all(
            action is Action.ALLOW
            for actions in (self.actions, *self.tenants.values())
            for action in actions.values()
        )


def parse_actions(spec: str) -> dict[Category, Action]:
    """`card_number=reject,contact=mask` → actions; a group name sets all its categories.

    Raises:
        ValueError: an unknown category, group or action (the message lists the known ones).
    """
    actions: dict[Category, Action] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{item!r}: expected CATEGORY=ACTION")
        actions.update(_expand(name.strip(), value.strip()))
    return actions


def policy_from_json(text: str, base: Actions | None = None) -> SensitiveDataPolicy:
    """A policy file: `{"default": {CATEGORY: ACTION}, "tenants": {TENANT: {...}}}`.

    Both keys are optional; categories a file leaves out keep `base` (the defaults).

    Raises:
        ValueError: the file is not such an object, or names an unknown category or action.
    """
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error}") from None
    if not isinstance(document, dict) or set(document) - {"default", "tenants"}:
        raise ValueError('expected an object with "default" and/or "tenants"')
    actions = dict(base if base is not None else DEFAULT_ACTIONS)
    actions.update(_actions_object(document.get("default", {}), "default"))
    tenants_document = document.get("tenants", {})
    if not isinstance(tenants_document, dict):
        raise ValueError('"tenants" must map tenant ids to objects')
    tenants = {
        str(tenant): types.MappingProxyType(_actions_object(value, f"tenants.{tenant}"))
        for tenant, value in tenants_document.items()
    }
    return SensitiveDataPolicy(types.MappingProxyType(actions), types.MappingProxyType(tenants))


def _actions_object(value: Any, where: str) -> dict[Category, Action]:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected an object of CATEGORY: ACTION")
    actions: dict[Category, Action] = {}
    for name, action in value.items():
        if not isinstance(action, str):
            raise ValueError(f"{where}.{name}: the action must be a string")
        try:
            actions.update(_expand(str(name), action))
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
    return actions


def _expand(name: str, action: str) -> dict[Category, Action]:
    try:
        chosen = Action(action.lower())
    except ValueError:
        known = ", ".join(a.value for a in Action)
        raise ValueError(f"unknown action {action!r} for {name!r} (one of {known})") from None
    if name in GROUPS:
        return dict.fromkeys(GROUPS[name], chosen)
    try:
        return {Category(name): chosen}
    except ValueError:
        known = ", ".join([*(c.value for c in Category), *GROUPS])
        raise ValueError(f"unknown category {name!r} (one of {known})") from None
