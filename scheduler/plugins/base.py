"""What every plugin is: a name, its arguments, and two hooks around a session.

In ``on_session_open`` a plugin registers its callbacks on the Session's extension points
(job order, allocatable, predicates…), as Volcano's plugins do; ``on_session_close`` lets it
finish its figures. Plugins sit below the framework: they see the Session through its type
only, so the framework can hand them the session without importing back into plugins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from scheduler.framework.session import Session


class Plugin:
    name: ClassVar[str] = ""

    def __init__(self, arguments: Mapping[str, Any] | None = None) -> None:
        self.arguments = dict(arguments or {})

    def argument(self, key: str, default: float) -> float:
        value = self.arguments.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(
                f"plugin {self.name}: argument {key}: expected a number, got {value!r}"
            )
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.arguments.get(key, default)
        if not isinstance(value, bool):
            raise ValueError(
                f"plugin {self.name}: argument {key}: expected true or false, got {value!r}"
            )
        return value

    def on_session_open(self, ssn: Session) -> None:
        raise NotImplementedError

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to do by default."""
