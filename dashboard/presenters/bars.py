"""A queue's capacity bar per resource: allocated | reserved | inqueue | free.

Widths and texts are finished here, in Python, so the template only places them: formatting in
the template cost the overview most of its time with 100 queues.
"""

from __future__ import annotations

from dataclasses import dataclass

from dashboard.presenters.amounts import format_amount
from scheduler.api.report import QueueReport

BAR_RESOURCES = ("cpu", "memory", "nvidia.com/gpu")


@dataclass(frozen=True)
class Segment:
    kind: str  # allocated, reserved, inqueue or free: the CSS class seg-<kind>
    width: str  # percent of the bar
    title: str


@dataclass(frozen=True)
class Bar:
    resource: str
    segments: list[Segment]
    summary: str
    deserved_left: str  # where the deserved marker sits, "" without one


def capacity_bars(queue: QueueReport) -> list[Bar]:
    """One bar per resource the queue uses or limits, drawn against the largest of the real
    capability, deserved and use, with deserved as a marker (both as the scheduler derived
    them, and labelled so).

    The inqueue segment is what admitted jobs still want beyond their pods' gate
    reservations: a job whose ungated pods wait for a node counts in both of the engine's
    figures (``inqueue_reserved`` says how much), and drawing both would count it twice."""
    bars = []
    for resource in BAR_RESOURCES:
        amounts = {
            "allocated": queue.allocated.get(resource, 0),
            "reserved": queue.reserved.get(resource, 0),
            "inqueue": max(
                queue.inqueue.get(resource, 0) - queue.inqueue_reserved.get(resource, 0), 0
            ),
        }
        capability = queue.capability.get(resource)
        deserved = queue.deserved.get(resource)
        used = sum(amounts.values())
        if not (used or capability or deserved):
            continue
        scale = max(capability or 0, deserved or 0, used) or 1
        free = max((capability or scale) - used, 0)
        parts = [(kind, v) for kind, v in [*amounts.items(), ("free", free)] if v]
        # Both limits are the scheduler's derived figures, not the Queue's spec: said so.
        real = format_amount(resource, capability) if capability else "unlimited"
        limits = f"real capability {real}"
        if deserved:
            limits += f", deserved {format_amount(resource, deserved)}"
        limits += " (derived)"
        summary = " · ".join(f"{k} {format_amount(resource, v)}" for k, v in parts)
        segments = [
            Segment(kind, f"{100 * v / scale:.2f}%", f"{kind} {format_amount(resource, v)}")
            for kind, v in parts
        ]
        marker = f"{100 * deserved / scale:.2f}%" if deserved else ""
        bars.append(Bar(resource, segments, f"{summary} / {limits}", marker))
    return bars
