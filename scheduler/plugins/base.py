"""What every plugin is: a name, its configuration (arguments and switches), and two hooks
around a session.

In ``on_session_open`` a plugin registers its callbacks on the Session's extension points
(``ssn.add_job_order_fn(self, fn)``…), as Volcano's plugins do; a point switched off in its
configuration (``enablePreemptable: false``) is not registered. ``on_session_close`` lets it
finish its figures. Plugins sit below the framework: they see the Session through its type
only, so the framework can hand them the session without importing back into plugins.

``ARGUMENTS`` names the arguments a plugin implements, with their defaults; ``VOLCANO_ONLY``
those Volcano's plugin of the same name takes and Sluice does not implement (accepted, with a
warning, so a Volcano configuration loads unchanged). Anything else is a configuration error.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from scheduler.config import PluginOption

if TYPE_CHECKING:
    from scheduler.framework.session import Session


class Vote(enum.IntEnum):
    """A plugin's answer where it may abstain: Volcano's util.Permit / Abstain / Reject."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


class Plugin:
    name: ClassVar[str] = ""
    ARGUMENTS: ClassVar[Mapping[str, Any]] = {}
    VOLCANO_ONLY: ClassVar[frozenset[str]] = frozenset()
    POSITIVE: ClassVar[frozenset[str]] = frozenset()  # numeric arguments that must be > 0
    NON_NEGATIVE_INTEGER: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, option: PluginOption | Mapping[str, Any] | None = None) -> None:
        if not isinstance(option, PluginOption):
            option = PluginOption(self.name, dict(option or {}))
        self.option = option
        self.arguments = dict(option.arguments)
        self.tier = 0  # set by the Session

    def enabled(self, switch: str) -> bool:
        return self.option.enabled(switch)

    @classmethod
    def accepts(cls, key: str) -> bool:
        """Whether ``key`` is an argument this plugin takes (or accepts as Volcano-only)."""
        return key in cls.ARGUMENTS or key in cls.VOLCANO_ONLY

    def argument(self, key: str, default: float | None = None) -> float:
        value = self.arguments.get(key, self.ARGUMENTS.get(key) if default is None else default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(
                f"plugin {self.name}: argument {key}: expected a number, got {value!r}"
            )
        if not math.isfinite(value):
            raise ValueError(
                f"plugin {self.name}: argument {key}: expected a finite number, got {value!r}"
            )
        if key in self.POSITIVE and value <= 0:
            raise ValueError(f"plugin {self.name}: argument {key}: must be > 0, got {value!r}")
        if key in self.NON_NEGATIVE_INTEGER and (value < 0 or value != int(value)):
            raise ValueError(
                f"plugin {self.name}: argument {key}: expected an integer >= 0, got {value!r}"
            )
        return value

    def flag(self, key: str, default: bool | None = None) -> bool:
        value = self.arguments.get(key, self.ARGUMENTS.get(key) if default is None else default)
        if not isinstance(value, bool):
            raise ValueError(
                f"plugin {self.name}: argument {key}: expected true or false, got {value!r}"
            )
        return value

    def check(self) -> None:
        """Raise ValueError naming the argument whose value cannot be used."""
        for key, default in self.ARGUMENTS.items():
            if key not in self.arguments:
                continue
            if isinstance(default, bool):
                self.flag(key)
            elif isinstance(default, int | float):
                self.argument(key)

    def on_session_open(self, ssn: Session) -> None:
        raise NotImplementedError

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to do by default."""
