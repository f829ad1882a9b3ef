"""Migration 0003 (typed states) converts a database written by the previous release: old
CamelCase states to the report's vocabulary, a kind for every stored transition, the gate
history onto tracked pods, no "pending" sum in cycle counts, and live state dropped."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("dashboard", "0002_live_state_and_levels")]
AFTER = [("dashboard", "0003_typed_states")]
AT = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def latest_schema_after():
    """Leave the database at the latest migration for the tests that follow."""
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def test_0003_converts_what_the_previous_schema_stored():
    old = migrate(BEFORE)
    cycle = old.get_model("dashboard", "Cycle").objects.create(
        started_at=AT, duration_ms=5, mode="act", counts={"Running": 2, "pending": 3}
    )
    transition = old.get_model("dashboard", "PodTransition")
    moves = [  # (from, to, uid) as the old writer recorded them
        ("Gated", "Pending", "u-gated"),
        ("Pending", "Binding", "u-bound"),
        ("Pending", "Pipelined", "u-pipe"),
        ("Running", "Releasing", "u-evicted"),
        ("Pipelined", "Pending", "u-pipe"),
        ("Binding", "Pending", "u-failed"),
    ]
    for old_from, old_to, uid in moves:
        transition.objects.create(
            cycle=cycle, at=AT, namespace="ns", name=uid, uid=uid, from_state=old_from,
            to_state=old_to, reason="why",
        )  # fmt: skip
    pod = old.get_model("dashboard", "PodState")
    pod.objects.create(uid="u-gated", namespace="ns", name="g", state="Pending", since=AT)
    pod.objects.create(uid="u-evicted", namespace="ns", name="e", state="Releasing", since=AT)
    old.get_model("dashboard", "LiveState").objects.create(key="cycle", data={"old": True})

    new = migrate(AFTER)

    rows = new.get_model("dashboard", "PodTransition").objects.order_by("id")
    assert [(r.kind, r.from_state, r.to_state) for r in rows] == [
        ("gate_removed", "gated", "waiting"),
        ("allocated", "waiting", "binding"),
        ("pipelined", "waiting", "pipelined"),
        ("evicted", "running", "terminating"),
        ("unpipelined", "pipelined", "waiting"),
        ("bind_failed", "binding", "waiting"),
    ]
    assert all(r.message == "why" for r in rows)  # the column was renamed, not emptied
    tracked = {p.uid: p for p in new.get_model("dashboard", "TrackedPod").objects.all()}
    assert (tracked["u-gated"].state, tracked["u-gated"].gate_removed) == ("waiting", True)
    assert (tracked["u-evicted"].state, tracked["u-evicted"].gate_removed) == (
        "terminating",
        False,
    )
    assert new.get_model("dashboard", "Cycle").objects.get().counts == {"Running": 2}
    assert not new.get_model("dashboard", "LiveState").objects.exists()


def test_0003_runs_on_an_empty_database_and_the_latest_schema_follows():
    migrate(BEFORE)
    migrate(AFTER)
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    executor.loader.build_graph()  # what is applied now, including migrations after 0003
    assert not executor.migration_plan(executor.loader.graph.leaf_nodes())


def test_0005_drops_transitions_that_changed_nothing_and_keeps_one_current_pod_per_name():
    old = migrate([("dashboard", "0004_cycle_failed")])
    cycle = old.get_model("dashboard", "Cycle").objects.create(
        started_at=AT, duration_ms=5, mode="act"
    )
    transition = old.get_model("dashboard", "PodTransition")
    for kind, from_state, to_state in [
        ("evicted", "terminating", "terminating"),  # "Releasing → Releasing" once
        ("bind_failed", "waiting", "waiting"),  # a failure: worth its line
        ("allocated", "waiting", "binding"),
    ]:
        transition.objects.create(
            cycle=cycle, at=AT, namespace="ns", name="p", uid="u", kind=kind,
            from_state=from_state, to_state=to_state,
        )  # fmt: skip
    tracked = old.get_model("dashboard", "TrackedPod")
    for i, state in enumerate(["running", "binding", "gated"]):  # one name, three restarts
        tracked.objects.create(uid=f"web-{i}", namespace="ns", name="web-0", state=state,
                               since=AT.replace(minute=i))  # fmt: skip
    tracked.objects.create(uid="other", namespace="ns", name="etl-0", state="running", since=AT)

    new = migrate([("dashboard", "0005_pods_of_a_cluster")])

    rows = new.get_model("dashboard", "PodTransition").objects.order_by("id")
    assert [(r.kind, r.from_state, r.to_state) for r in rows] == [
        ("bind_failed", "waiting", "waiting"),
        ("allocated", "waiting", "binding"),
    ]
    pods = new.get_model("dashboard", "TrackedPod").objects
    assert dict(pods.values_list("uid", "state")) == {
        "web-0": "deleted",
        "web-1": "deleted",
        "web-2": "gated",  # the latest of the name is the one that can exist now
        "other": "running",
    }
    assert set(pods.values_list("cluster", flat=True)) == {""}  # an unknown cluster
    assert new.get_model("dashboard", "Cycle").objects.get().cluster == ""


def test_0007_gives_each_stored_sample_its_cycle_s_cluster():
    old = migrate([("dashboard", "0006_whatif_experiments")])
    cycle = old.get_model("dashboard", "Cycle")
    sample = old.get_model("dashboard", "QueueSample")
    for n, cluster in enumerate(["uid-a", "uid-b", ""]):
        c = cycle.objects.create(started_at=AT.replace(minute=n), duration_ms=1, mode="act",
                                 cluster=cluster)  # fmt: skip
        sample.objects.create(cycle=c, at=c.started_at, queue="q")

    new = migrate([("dashboard", "0007_history_per_cluster")])

    rows = new.get_model("dashboard", "QueueSample").objects.order_by("at")
    assert [r.cluster for r in rows] == ["uid-a", "uid-b", ""]
    assert all(c.stored_at is None for c in new.get_model("dashboard", "Cycle").objects.all())
