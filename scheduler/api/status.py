"""Why, as data: every check returns a ``Status(code, plugin, message)``, as kube-scheduler's
filter plugins do.

The code says what kind of wait it is; what a pod's ``PodScheduled`` condition says and what
the dashboard shows are decided from it, never from the message's words. The message is for
people.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class Code(enum.StrEnum):
    SUCCESS = "Success"
    # The nodes cannot take the pod now (resources, taints, selectors, pod slots): a node
    # shortfall, what kube-scheduler calls Unschedulable and what an autoscaler acts on.
    UNSCHEDULABLE = "Unschedulable"
    # The pod still carries scheduling gates (ours or another controller's).
    GATED = "Gated"
    # Its queue, or an ancestor, has no room: capability, quota, deserved share, or room held
    # by other pods' gate reservations.
    QUEUE_FULL = "QueueFull"
    QUEUE_CLOSED = "QueueClosed"
    # No such queue, a queue that is not a leaf, or a broken hierarchy.
    QUEUE_INVALID = "QueueInvalid"
    # The gang cannot run together yet (too few members, or the rest do not fit).
    GANG = "GangNotReady"
    # The node-capacity admission check (Kueue KEP-3211) holds the workload.
    ADMISSION_HELD = "AdmissionHeld"
    # Placed on a nominated node, waiting for resources there to be released.
    PIPELINED = "Pipelined"
    # An object Sluice cannot use: a field it cannot read, a PodGroup that does not exist.
    INVALID_OBJECT = "InvalidObject"
    # Not looked at in this cycle (its job was not reached).
    NOT_CONSIDERED = "NotConsidered"
    # A plugin with nothing to say about this one (kube-scheduler's Skip, Volcano's Abstain).
    SKIP = "Skip"


QUEUE_CODES = frozenset({Code.QUEUE_FULL, Code.QUEUE_CLOSED, Code.QUEUE_INVALID})


@dataclass(frozen=True, slots=True)
class Status:
    code: Code
    plugin: str = ""  # the plugin or action that decided
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS

    @property
    def node_shortfall(self) -> bool:
        """The pod waits for nodes, not for its queue: the one case an autoscaler should see."""
        return self.code is Code.UNSCHEDULABLE

    @property
    def queue_limited(self) -> bool:
        return self.code in QUEUE_CODES

    def __str__(self) -> str:
        return self.message or self.code.value

    def to_json(self) -> dict[str, str]:
        return {"code": self.code.value, "plugin": self.plugin, "message": self.message}

    @classmethod
    def from_json(cls, data: Any) -> Status:
        if not isinstance(data, dict):
            return cls(Code.NOT_CONSIDERED, "", str(data or ""))
        try:
            code = Code(str(data.get("code")))
        except ValueError:
            code = Code.NOT_CONSIDERED
        return cls(code, str(data.get("plugin") or ""), str(data.get("message") or ""))


SUCCESS = Status(Code.SUCCESS)


def success() -> Status:
    return SUCCESS
