"""Why a pod waits, in words: the admission check's verdict decides between "held" and a false
admission."""

from dashboard.selectors.reasons import wait_reason

POD = {"uid": "u1", "gated": False, "state": "unschedulable",
       "reason": "0/3 nodes are unavailable: 3 Insufficient cpu."}  # fmt: skip
NO_SHAPE = {"risk": "fits_no_node_shape", "explanation": "no node shape fits 17 CPU"}


def test_a_workload_the_check_holds_is_said_to_be_held():
    risk = {**NO_SHAPE, "check_state": "Retry"}
    assert wait_reason(POD, risk) == "held by the admission check: no node shape fits 17 CPU"


def test_a_workload_admitted_without_the_check_is_a_false_admission():
    risk = {**NO_SHAPE, "check_state": ""}
    assert wait_reason(POD, risk) == (
        "fits no node shape (admitted by its queue's quota): no node shape fits 17 CPU"
    )


def test_pipelined_and_unschedulable_pods_keep_their_own_words():
    pipelined = {
        **POD,
        "state": "pipelined",
        "reason": "pipelined on n1 until 1 pod finishes there",
    }
    assert wait_reason(pipelined) == "pipelined on n1 until 1 pod finishes there"
    assert wait_reason(POD).startswith("no node fits: 0/3 nodes")
    assert wait_reason(POD, gate_removed=True).startswith("gate removed; no node fits")


def test_a_gated_pod_the_check_holds_is_said_to_be_held_not_admitted():
    gated = {**POD, "gated": True, "state": "gated", "reason": ""}
    assert wait_reason(gated, {**NO_SHAPE, "check_state": "Retry"}) == (
        "held by the admission check: no node shape fits 17 CPU"
    )


def test_a_gated_pod_that_fits_no_node_shape_still_waits_for_its_queue_first():
    gated = {**POD, "gated": True, "state": "gated", "reason": "queue lab is full"}
    assert wait_reason(gated, {**NO_SHAPE, "check_state": ""}) == (
        "waiting for queue capacity (gated), and fits no node shape: no node shape fits 17 CPU"
    )
