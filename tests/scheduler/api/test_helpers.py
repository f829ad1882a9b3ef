"""scheduler.api.helpers: the scheduling-gate helpers."""

from scheduler.api.helpers import (
    has_only_volcano_scheduling_gate,
    has_queue_allocation_gate_annotation,
)
from scheduler.api.task_info import TaskInfo
from tests.builders import GATE, pod


def test_gate_helpers():
    ours = pod("a", gates=[GATE], opt_in=True)
    both = pod("b", gates=[GATE, "x/y"], opt_in=True)
    assert has_queue_allocation_gate_annotation(ours) and has_only_volcano_scheduling_gate(ours)
    assert not has_only_volcano_scheduling_gate(both)
    assert not has_queue_allocation_gate_annotation(pod("c"))
    assert TaskInfo(both).sch_gated and not TaskInfo(pod("c")).sch_gated
