"""Scheduler plugins. Each registers callbacks on the Session in ``on_session_open``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class Plugin:
    name = ""

    def __init__(self, arguments: Mapping[str, Any] | None = None) -> None:
        self.arguments = dict(arguments or {})

    def argument(self, key: str, default: float) -> float:
        value = self.arguments.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(
                f"plugin {self.name}: argument {key}: expected a number, got {value!r}"
            )
        return value

    def on_session_open(self, ssn: Any) -> None:  # pragma: no cover - overridden
        raise NotImplementedError
