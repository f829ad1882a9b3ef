"""policy/v1 PodDisruptionBudgets and the eviction subresource that enforces them, through the
kubernetes client and raw HTTP, compared with what kube-apiserver v1.32 answers."""

from __future__ import annotations

import json

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from scheduler.kube.client import ApiError as SchedulerApiError
from scheduler.kube.client import KubeClusterClient
from tests.builders import body, pod
from tests.simcluster.api.helpers import http

SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
    "support."
)


def policy(sim) -> client.PolicyV1Api:
    return client.PolicyV1Api(sim.api_client)


def budget(name: str = "web", selector: object = None, **spec: object) -> dict:
    spec = dict(spec)
    spec["selector"] = {"matchLabels": {"app": "web"}} if selector is None else selector
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": spec,
    }


def create_budget(sim, name: str = "web", **spec: object) -> dict:
    response = policy(sim).create_namespaced_pod_disruption_budget(
        "default", budget(name, **spec), _preload_content=False
    )
    return json.loads(response.data)


def read_budget(sim, name: str = "web") -> dict:
    response = policy(sim).read_namespaced_pod_disruption_budget(
        name, "default", _preload_content=False
    )
    return json.loads(response.data)


def add_pod(
    sim, name: str, *, app: str = "web", phase: str = "Running", ready: bool = True
) -> None:
    """A pod in ``phase`` with its Ready condition as ``ready`` says: bound to node-1, or not
    yet scheduled when Pending."""
    node = None if phase == "Pending" else "node-1"
    sim.core.create_namespaced_pod(
        "default", body(pod(name, namespace="default", labels={"app": app}, node_name=node))
    )
    if phase == "Pending":
        return
    ready_condition = {"type": "Ready", "status": "True" if ready else "False"}
    status = {"phase": phase, "conditions": [ready_condition]}
    sim.core.patch_namespaced_pod_status(name, "default", {"status": status}, _content_type=SMP)


def evict(sim, name: str, **delete_options: object) -> tuple[int, dict]:
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": "default"},
    }
    if delete_options:
        eviction["deleteOptions"] = delete_options
    path = f"/api/v1/namespaces/default/pods/{name}/eviction"
    return http(sim.server.url, "POST", path, eviction)


def counters(pdb: dict) -> tuple[int, int, int, int]:
    """(expectedPods, currentHealthy, desiredHealthy, disruptionsAllowed)."""
    status = pdb["status"]
    return (
        status["expectedPods"],
        status["currentHealthy"],
        status["desiredHealthy"],
        status["disruptionsAllowed"],
    )


# -- serving the resource ------------------------------------------------------------------------


def test_discovery_serves_policy_v1_poddisruptionbudgets(sim):
    groups = {g["name"]: g for g in http(sim.server.url, "GET", "/apis")[1]["groups"]}
    assert groups["policy"]["preferredVersion"] == {"groupVersion": "policy/v1", "version": "v1"}
    listing = http(sim.server.url, "GET", "/apis/policy/v1")[1]
    assert listing["groupVersion"] == "policy/v1"
    resources = {r["name"]: r for r in listing["resources"]}
    assert resources["poddisruptionbudgets"] == {
        "name": "poddisruptionbudgets",
        "singularName": "poddisruptionbudget",
        "namespaced": True,
        "kind": "PodDisruptionBudget",
        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        "shortNames": ["pdb"],
    }
    assert resources["poddisruptionbudgets/status"]["verbs"] == ["get", "patch", "update"]
    assert http(sim.server.url, "GET", "/apis/policy")[1]["kind"] == "APIGroup"


def test_create_read_update_patch_delete(sim):
    created = create_budget(sim, minAvailable=1)
    assert created["apiVersion"] == "policy/v1" and created["kind"] == "PodDisruptionBudget"
    assert created["metadata"]["generation"] == 1
    # As kube-apiserver: the status of a new PDB is reset, then the controller fills it in.
    assert created["status"] == {
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
    }
    read = read_budget(sim)
    assert read["status"]["observedGeneration"] == 1
    assert counters(read) == (0, 0, 1, 0)
    [condition] = read["status"]["conditions"]
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "DisruptionAllowed",
        "status": "False",
        "reason": "InsufficientPods",
        "message": "",
    }
    listed = policy(sim).list_namespaced_pod_disruption_budget("default")
    assert [p.metadata.name for p in listed.items] == ["web"]
    assert listed.items[0].spec.min_available == 1
    everywhere = policy(sim).list_pod_disruption_budget_for_all_namespaces()
    assert [p.metadata.name for p in everywhere.items] == ["web"]

    replaced = dict(read, spec={"minAvailable": "50%", "selector": read["spec"]["selector"]})
    replaced = policy(sim).replace_namespaced_pod_disruption_budget("web", "default", replaced)
    assert replaced.metadata.generation == 2  # a changed spec bumps the generation
    assert read_budget(sim)["status"]["observedGeneration"] == 2
    patched = policy(sim).patch_namespaced_pod_disruption_budget(
        "web", "default", {"metadata": {"labels": {"team": "a"}}}, _content_type=MERGE
    )
    assert patched.metadata.generation == 2  # metadata only: same generation
    switched = policy(sim).patch_namespaced_pod_disruption_budget(
        "web", "default", {"spec": {"minAvailable": None, "maxUnavailable": 1}}, _content_type=SMP
    )
    assert switched.spec.max_unavailable == 1 and switched.spec.min_available is None
    assert switched.metadata.generation == 3

    policy(sim).delete_namespaced_pod_disruption_budget("web", "default")
    with pytest.raises(ApiException) as caught:
        policy(sim).read_namespaced_pod_disruption_budget("web", "default")
    assert caught.value.status == 404
    assert json.loads(caught.value.body)["message"] == (
        'poddisruptionbudgets.policy "web" not found'
    )


def test_an_update_cannot_write_the_status_and_the_status_subresource_keeps_the_spec(sim):
    create_budget(sim, minAvailable=1)
    current = read_budget(sim)
    current["status"]["expectedPods"] = 7
    current["spec"]["minAvailable"] = 2
    updated = policy(sim).replace_namespaced_pod_disruption_budget("web", "default", current)
    assert updated.status.expected_pods == 0 and updated.spec.min_available == 2
    current = read_budget(sim)
    current["spec"]["minAvailable"] = 5
    current["status"]["expectedPods"] = -1
    code, status = http(sim.server.url, "PUT", f"{PDBS}/web/status", current)
    assert code == 422
    assert status["message"] == (
        'PodDisruptionBudget.policy "web" is invalid: status.expectedPods: Invalid value: -1: '
        "must be greater than or equal to 0"
    )
    assert read_budget(sim)["spec"]["minAvailable"] == 2


def test_watch_streams_poddisruptionbudgets(sim):
    start = policy(sim).list_namespaced_pod_disruption_budget("default").metadata.resource_version
    create_budget(sim, minAvailable=1)
    events = []
    stream = watch.Watch()
    for event in stream.stream(
        policy(sim).list_namespaced_pod_disruption_budget,
        "default",
        resource_version=start,
        timeout_seconds=5,
    ):
        events.append((event["type"], event["object"].status.observed_generation))
        if len(events) == 2:
            stream.stop()
    # created (status reset), then the disruption controller's first status
    assert events == [("ADDED", None), ("MODIFIED", 1)]


# -- validation -------------------------------------------------------------------------------


SPEC_STRUCT = (
    "policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)(0xc000a4c0a0), "
    "Selector:(*v1.LabelSelector)(0xc000a4c0c0), "
    "MaxUnavailable:(*intstr.IntOrString)(0xc000a4c0b0), "
    "UnhealthyPodEvictionPolicy:(*policy.UnhealthyPodEvictionPolicyType)(nil)}"
)
PERCENT = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  "
    "or '93%', regex used for validation is '[0-9]+%')"
)


@pytest.mark.parametrize(
    ("spec", "field", "reason", "message"),
    [
        (
            {"minAvailable": 1, "maxUnavailable": 1},
            "spec",
            "FieldValueInvalid",
            f"Invalid value: {SPEC_STRUCT}: minAvailable and maxUnavailable cannot be both set",
        ),
        (
            {"minAvailable": -1},
            "spec.minAvailable",
            "FieldValueInvalid",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            {"maxUnavailable": "half"},
            "spec.maxUnavailable",
            "FieldValueInvalid",
            f'Invalid value: intstr.IntOrString{{Type:1, IntVal:0, StrVal:"half"}}: {PERCENT}',
        ),
        (
            {"minAvailable": "2"},  # a string must be a percentage
            "spec.minAvailable",
            "FieldValueInvalid",
            f'Invalid value: intstr.IntOrString{{Type:1, IntVal:0, StrVal:"2"}}: {PERCENT}',
        ),
        (
            {"minAvailable": "150%"},
            "spec.minAvailable",
            "FieldValueInvalid",
            'Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: '
            "must not be greater than 100%",
        ),
        (
            {
                "minAvailable": 1,
                "selector": {"matchExpressions": [{"key": "app", "operator": "In"}]},
            },
            "spec.selector.matchExpressions[0].values",
            "FieldValueRequired",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            {
                "minAvailable": 1,
                "selector": {"matchExpressions": [{"key": "app", "operator": "Near"}]},
            },
            "spec.selector.matchExpressions[0].operator",
            "FieldValueInvalid",
            'Invalid value: "Near": not a valid selector operator',
        ),
        (
            {"minAvailable": 1, "unhealthyPodEvictionPolicy": "Sometimes"},
            "spec.unhealthyPodEvictionPolicy",
            "FieldValueNotSupported",
            'Unsupported value: "Sometimes": supported values: "AlwaysAllow", "IfHealthyBudget"',
        ),
    ],
)
def test_invalid_budgets_are_refused_naming_the_field(sim, spec, field, reason, message):
    selector = spec.pop("selector", None)
    with pytest.raises(ApiException) as caught:
        policy(sim).create_namespaced_pod_disruption_budget(
            "default", budget(selector=selector, **spec)
        )
    status = json.loads(caught.value.body)
    assert caught.value.status == 422 and status["reason"] == "Invalid"
    assert status["details"] == {
        "name": "web",
        "group": "policy",
        "kind": "PodDisruptionBudget",
        "causes": [{"reason": reason, "message": message, "field": field}],
    }
    assert status["message"] == f'PodDisruptionBudget.policy "web" is invalid: {field}: {message}'


def test_several_errors_are_listed_in_brackets(sim):
    code, status = http(sim.server.url, "POST", PDBS, budget(minAvailable=-1, maxUnavailable="x"))
    assert code == 422
    assert [c["field"] for c in status["details"]["causes"]] == [
        "spec",
        "spec.minAvailable",
        "spec.maxUnavailable",
    ]
    assert status["message"].startswith('PodDisruptionBudget.policy "web" is invalid: [spec: ')


def test_a_value_of_the_wrong_type_is_a_decoding_error(sim):
    code, status = http(sim.server.url, "POST", PDBS, budget(minAvailable=True))
    assert code == 400 and status["reason"] == "BadRequest"
    assert status["message"] == (
        'PodDisruptionBudget in version "v1" cannot be handled as a PodDisruptionBudget: json: '
        "cannot unmarshal bool into Go struct field PodDisruptionBudgetSpec.spec.minAvailable "
        "of type int32"
    )


def test_neither_min_available_nor_max_unavailable_is_accepted_and_allows_nothing(sim):
    """policy/v1 has no default (v1beta1 defaulted minAvailable to 1); kube-apiserver accepts
    it, and the disruption controller then allows no disruption."""
    for name in ("web-0", "web-1"):
        add_pod(sim, name)
    create_budget(sim)
    assert counters(read_budget(sim)) == (0, 2, 0, 0)
    code, status = evict(sim, "web-0")
    assert code == 429
    assert status["details"]["causes"][0]["message"] == (
        "The disruption budget web needs 0 healthy pods and has 2 currently"
    )


# -- the disruption controller ----------------------------------------------------------------


def test_status_counts_ready_matching_pods_not_being_deleted(sim):
    for name in ("web-0", "web-1", "web-2"):
        add_pod(sim, name)
    add_pod(sim, "web-unready", ready=False)
    add_pod(sim, "web-pending", phase="Pending")
    add_pod(sim, "db-0", app="db")
    create_budget(sim, minAvailable=2)
    assert counters(read_budget(sim)) == (5, 3, 2, 1)
    sim.core.delete_namespaced_pod("web-2", "default")  # graceful: being deleted, not healthy
    assert counters(read_budget(sim)) == (5, 2, 2, 0)
    sim.core.patch_namespaced_pod_status(
        "web-unready",
        "default",
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        _content_type=SMP,
    )
    assert counters(read_budget(sim)) == (5, 3, 2, 1)
    sim.core.patch_namespaced_pod(
        "web-0", "default", {"metadata": {"labels": {"app": "other"}}}, _content_type=SMP
    )
    assert counters(read_budget(sim)) == (4, 2, 2, 0)


def test_status_follows_pod_changes_the_api_does_not_see(sim):
    """The kubelet writes the store directly; the controller sees those changes too."""
    add_pod(sim, "web-0", phase="Pending")
    create_budget(sim, maxUnavailable=0)
    assert counters(read_budget(sim)) == (1, 0, 1, 0)

    def run(p: dict) -> None:
        p["status"].update(phase="Running", conditions=[{"type": "Ready", "status": "True"}])

    sim.store.mutate("pods", "default", "web-0", run)
    assert counters(read_budget(sim)) == (1, 1, 1, 0)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"minAvailable": 2}, (3, 3, 2, 1)),
        ({"minAvailable": "50%"}, (3, 3, 2, 1)),  # ceil(1.5)
        ({"minAvailable": "100%"}, (3, 3, 3, 0)),
        ({"maxUnavailable": 1}, (3, 3, 2, 1)),
        ({"maxUnavailable": "34%"}, (3, 3, 1, 2)),  # 3 - ceil(1.02)
        ({"maxUnavailable": 5}, (3, 3, 0, 3)),  # desiredHealthy is never below 0
    ],
)
def test_desired_healthy_from_min_available_or_max_unavailable(sim, spec, expected):
    for name in ("web-0", "web-1", "web-2"):
        add_pod(sim, name)
    create_budget(sim, **spec)
    assert counters(read_budget(sim)) == expected


def test_a_budget_matching_no_pod_allows_no_disruption(sim):
    create_budget(sim, maxUnavailable=3)
    assert counters(read_budget(sim)) == (0, 0, 0, 0)


def test_a_null_selector_matches_no_pod_and_an_empty_one_every_pod(sim):
    add_pod(sim, "web-0")
    add_pod(sim, "db-0", app="db")
    policy(sim).create_namespaced_pod_disruption_budget(
        "default",
        {"metadata": {"name": "none"}, "spec": {"minAvailable": 0}},
    )
    create_budget(sim, "all", selector={}, minAvailable=0)
    assert counters(read_budget(sim, "none")) == (0, 0, 0, 0)
    assert counters(read_budget(sim, "all")) == (2, 2, 0, 2)


# -- the eviction subresource -----------------------------------------------------------------


def test_an_eviction_that_would_violate_the_budget_is_refused_with_429(sim):
    for name in ("web-0", "web-1"):
        add_pod(sim, name)
    create_budget(sim, minAvailable=2)
    code, status = evict(sim, "web-0")
    assert (code, status) == (
        429,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": VIOLATION,
            "reason": "TooManyRequests",
            "code": 429,
            "details": {
                "causes": [
                    {
                        "reason": "DisruptionBudget",
                        "message": "The disruption budget web needs 2 healthy pods and has 2 "
                        "currently",
                    }
                ]
            },
        },
    )
    web_0 = sim.core.read_namespaced_pod("web-0", "default")
    assert web_0.metadata.deletion_timestamp is None
    assert counters(read_budget(sim)) == (2, 2, 2, 0)
    with pytest.raises(ApiException) as caught:  # the client's own call
        sim.core.create_namespaced_pod_eviction(
            "web-0", "default", {"metadata": {"name": "web-0", "namespace": "default"}}
        )
    assert caught.value.status == 429


def test_an_allowed_eviction_spends_the_budget_and_deletes_the_pod_gracefully(sim):
    for name in ("web-0", "web-1", "web-2"):
        add_pod(sim, name)
    create_budget(sim, minAvailable=2)
    before = read_budget(sim)
    assert counters(before) == (3, 3, 2, 1)
    assert before["status"]["conditions"][0]["reason"] == "SufficientPods"
    start = before["metadata"]["resourceVersion"]

    code, status = evict(sim, "web-1")
    assert (code, status) == (
        201,
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201},
    )
    # The eviction records the pod it is about to delete, as kube-apiserver does …
    events = []
    stream = watch.Watch()
    for event in stream.stream(
        policy(sim).list_namespaced_pod_disruption_budget,
        "default",
        resource_version=start,
        timeout_seconds=5,
    ):
        events.append(event["raw_object"]["status"])
        if len(events) == 2:
            stream.stop()
    decremented = events[0]
    assert decremented["disruptionsAllowed"] == 0
    assert set(decremented["disruptedPods"]) == {"web-1"}
    assert decremented["conditions"][0]["reason"] == "InsufficientPods"
    # … and once the pod is being deleted, the controller counts it out and forgets it.
    after = read_budget(sim)
    assert counters(after) == (3, 2, 2, 0)
    assert "disruptedPods" not in after["status"]

    evicted = sim.core.read_namespaced_pod("web-1", "default")
    assert evicted.metadata.deletion_timestamp is not None
    assert evicted.metadata.deletion_grace_period_seconds == 30
    target = next(c for c in evicted.status.conditions if c.type == "DisruptionTarget")
    assert (target.status, target.reason, target.message) == (
        "True",
        "EvictionByEvictionAPI",
        "Eviction API: evicting",
    )
    code, status = evict(sim, "web-2")
    assert code == 429
    assert status["details"]["causes"][0]["message"] == (
        "The disruption budget web needs 2 healthy pods and has 2 currently"
    )


def test_the_eviction_passes_its_delete_options_on(sim):
    for name in ("web-0", "web-1"):
        add_pod(sim, name)
    create_budget(sim, maxUnavailable=1)
    code, _ = evict(sim, "web-0", gracePeriodSeconds=0)
    assert code == 201
    assert [p.metadata.name for p in sim.core.list_namespaced_pod("default").items] == ["web-1"]
    assert counters(read_budget(sim)) == (1, 1, 0, 1)


def test_a_dry_run_eviction_changes_nothing(sim):
    for name in ("web-0", "web-1"):
        add_pod(sim, name)
    create_budget(sim, minAvailable=1)
    code, _ = evict(sim, "web-0", dryRun=["All"])
    assert code == 201
    assert sim.core.read_namespaced_pod("web-0", "default").metadata.deletion_timestamp is None
    assert counters(read_budget(sim)) == (2, 2, 1, 1)


def test_a_pod_matched_by_two_budgets_cannot_be_evicted(sim):
    add_pod(sim, "web-0")
    create_budget(sim, "web-a", maxUnavailable=1)
    create_budget(
        sim,
        "web-b",
        selector={"matchExpressions": [{"key": "app", "operator": "Exists"}]},
        maxUnavailable=1,
    )
    code, status = evict(sim, "web-0")
    # The handler's own metav1.Status: no reason, no details.
    assert (code, status) == (
        500,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": MULTIPLE,
            "code": 500,
        },
    )
    assert sim.core.read_namespaced_pod("web-0", "default").metadata.deletion_timestamp is None


def test_a_pending_pod_is_evicted_despite_its_budget(sim):
    add_pod(sim, "web-0")
    add_pod(sim, "web-pending", phase="Pending")
    create_budget(sim, minAvailable=2)
    assert counters(read_budget(sim)) == (2, 1, 2, 0)
    code, _ = evict(sim, "web-pending")
    assert code == 201
    names = [p.metadata.name for p in sim.core.list_namespaced_pod("default").items]
    assert names == ["web-0"]  # never scheduled: deleted at once
    assert counters(read_budget(sim)) == (1, 1, 2, 0)


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_pod_is_evicted_despite_its_budget(sim, phase):
    add_pod(sim, "web-0", phase=phase, ready=False)
    add_pod(sim, "web-1")
    create_budget(sim, minAvailable=1)
    assert evict(sim, "web-0")[0] == 201


def test_an_unready_pod_goes_without_spending_a_budget_that_is_met(sim):
    for name in ("web-0", "web-1"):
        add_pod(sim, name)
    add_pod(sim, "web-unready", ready=False)
    create_budget(sim, minAvailable=2)
    assert counters(read_budget(sim)) == (3, 2, 2, 0)
    code, _ = evict(sim, "web-unready")  # IfHealthyBudget: 2 healthy >= 2 desired > 0
    assert code == 201
    assert read_budget(sim)["status"]["disruptionsAllowed"] == 0


def test_an_unready_pod_of_an_unmet_budget_needs_always_allow(sim):
    add_pod(sim, "web-0")
    add_pod(sim, "web-unready", ready=False)
    create_budget(sim, minAvailable=2)
    assert counters(read_budget(sim)) == (2, 1, 2, 0)
    code, status = evict(sim, "web-unready")
    assert code == 429
    assert status["details"]["causes"][0]["message"] == (
        "The disruption budget web needs 2 healthy pods and has 1 currently"
    )
    policy(sim).patch_namespaced_pod_disruption_budget(
        "web", "default", {"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}},
        _content_type=MERGE,
    )  # fmt: skip
    assert evict(sim, "web-unready")[0] == 201


def test_evicting_a_missing_pod_is_404(sim):
    code, status = evict(sim, "ghost")
    assert code == 404 and status["message"] == 'pods "ghost" not found'


def test_the_schedulers_eviction_path_receives_the_refusal(sim):
    for name in ("web-0", "web-1"):
        add_pod(sim, name)
    create_budget(sim, minAvailable=2)
    pod_json = json.loads(
        sim.core.read_namespaced_pod("web-0", "default", _preload_content=False).data
    )
    cluster = KubeClusterClient(sim.api_client)
    with pytest.raises(SchedulerApiError) as caught:
        cluster.evict(pod_json, "preempted by a higher-priority job")
    assert caught.value.status == 429
    assert VIOLATION in str(caught.value)
    assert sim.core.list_namespaced_event("default").items == []  # no Evict event recorded
    assert sim.core.read_namespaced_pod("web-0", "default").metadata.deletion_timestamp is None
