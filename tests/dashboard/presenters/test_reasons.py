"""Why a pod waits, in words: chosen from the pod's state, its Status code and the admission
check's verdict — never from the engine's words, which are only quoted."""

from dashboard.presenters.reasons import wait_reason
from scheduler.api.report import CheckState, PodState, RiskClass, WaitingPod, WorkloadRisk
from scheduler.api.status import Code
from tests.builders import risk, waiting_pod

FIT_ERROR = "0/3 nodes are unavailable: 3 Insufficient cpu."


def waiting_as(state: PodState, code: Code, message: str) -> WaitingPod:
    """Pod ns/p (uid u1) of queue q, waiting in ``state`` for ``code`` with ``message``."""
    return waiting_pod("p", "q", namespace="ns", uid="u1", state=state, code=code, reason=message)


UNSCHEDULABLE = waiting_as(PodState.UNSCHEDULABLE, Code.UNSCHEDULABLE, FIT_ERROR)


def no_shape(check: CheckState | None) -> WorkloadRisk:
    """Workload ns/w (pod u1), which fits no node shape; ``check``: the admission check's say."""
    return risk(
        "w",
        RiskClass.FITS_NO_NODE_SHAPE,
        "no node shape fits 17 CPU",
        namespace="ns",
        queue="q",
        uid="w",
        check=check,
        pods=["u1"],
    )


def test_a_workload_the_check_holds_is_said_to_be_held():
    assert wait_reason(UNSCHEDULABLE, no_shape(CheckState.RETRY)) == (
        "held by the admission check: no node shape fits 17 CPU"
    )


def test_a_workload_admitted_without_the_check_is_a_false_admission():
    assert wait_reason(UNSCHEDULABLE, no_shape(None)) == (
        "fits no node shape (admitted by its queue's quota): no node shape fits 17 CPU"
    )


def test_pipelined_and_unschedulable_pods_keep_their_own_words():
    pipelined = waiting_as(
        PodState.PIPELINED, Code.PIPELINED, "pipelined on n1 until 1 pod finishes"
    )
    assert wait_reason(pipelined) == "pipelined on n1 until 1 pod finishes"
    assert wait_reason(UNSCHEDULABLE) == f"no node fits: {FIT_ERROR} (autoscaler notified)"
    assert wait_reason(UNSCHEDULABLE, gate_removed=True).startswith("gate removed; no node fits")


def test_a_gated_pod_the_check_holds_is_said_to_be_held_not_admitted():
    gated = waiting_as(PodState.GATED, Code.QUEUE_FULL, "")
    assert wait_reason(gated, no_shape(CheckState.RETRY)) == (
        "held by the admission check: no node shape fits 17 CPU"
    )


def test_a_gated_pod_that_fits_no_node_shape_still_waits_for_its_queue_first():
    gated = waiting_as(PodState.GATED, Code.QUEUE_FULL, "queue lab is full")
    assert wait_reason(gated, no_shape(None)) == (
        "waiting for queue capacity (gated), and fits no node shape: no node shape fits 17 CPU"
    )


def test_the_words_follow_the_code_not_the_message():
    # A message that mentions a queue and its capability, but the code says nodes are short:
    # the pod is unschedulable, and an autoscaler was told. The reverse holds too.
    words = "queue capability exceeded: insufficient cpu"
    assert wait_reason(waiting_as(PodState.UNSCHEDULABLE, Code.UNSCHEDULABLE, words)).startswith(
        "no node fits"
    )
    assert wait_reason(waiting_as(PodState.WAITING, Code.QUEUE_FULL, "0/3 nodes")).startswith(
        "waiting for queue capacity"
    )


def test_an_unpipelined_pod_that_never_had_a_gate_is_not_said_to_have_lost_one():
    # The old dashboard inferred "gate removed" from a last transition to Pending, which an
    # unpipelined pod also makes; now only a gate_removed transition says so.
    assert not wait_reason(UNSCHEDULABLE, gate_removed=False).startswith("gate removed")


def test_a_foreign_gate_is_named_as_such():
    gated = waiting_as(
        PodState.GATED, Code.GATED, "waiting for scheduling gates to be removed: x/y"
    )
    assert wait_reason(gated) == "waiting for scheduling gates to be removed: x/y"
