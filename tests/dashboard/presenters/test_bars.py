"""Capacity bars: segments in the engine's units, never counting a reserved pod twice."""

from __future__ import annotations

from dashboard.presenters.bars import Bar, capacity_bars
from scheduler.api.report import QueueReport

CPU = 1000


def cpu_bar(queue: QueueReport) -> Bar:
    return next(b for b in capacity_bars(queue) if b.resource == "cpu")


def test_a_reserved_admitted_pod_is_drawn_once():
    # lab in the demo: one 17-CPU pod, admitted (inqueue) and ungated (reserved), no node yet.
    lab = QueueReport("lab", capability={"cpu": 18 * CPU}, reserved={"cpu": 17 * CPU},
                      inqueue={"cpu": 17 * CPU}, inqueue_reserved={"cpu": 17 * CPU})  # fmt: skip

    bar = cpu_bar(lab)

    assert [s.kind for s in bar.segments] == ["reserved", "free"]
    assert bar.summary == "reserved 17 CPU · free 1 CPU / real capability 18 CPU (derived)"


def test_inqueue_beyond_the_reservations_is_drawn_and_free_is_what_is_left():
    prod = QueueReport("prod", capability={"cpu": 24 * CPU}, deserved={"cpu": 16 * CPU},
                       allocated={"cpu": 6 * CPU}, reserved={"cpu": 8 * CPU},
                       inqueue={"cpu": 11 * CPU}, inqueue_reserved={"cpu": 8 * CPU})  # fmt: skip

    bar = cpu_bar(prod)

    assert bar.summary == (
        "allocated 6 CPU · reserved 8 CPU · inqueue 3 CPU · free 7 CPU"
        " / real capability 24 CPU, deserved 16 CPU (derived)"
    )
    assert [s.width for s in bar.segments] == ["25.00%", "33.33%", "12.50%", "29.17%"]
    assert bar.deserved_left == "66.67%"


def test_inqueue_without_reservations_is_drawn_whole():
    queue = QueueReport("q", capability={"cpu": 8 * CPU}, inqueue={"cpu": 2 * CPU})

    assert cpu_bar(queue).summary == (
        "inqueue 2 CPU · free 6 CPU / real capability 8 CPU (derived)"
    )
