"""overcommit: jobs are admitted while the cluster's total times overcommit-factor, less what
its pods use, holds their minResources beside what admitted jobs still claim (Volcano's
overcommit.go at ed72c7c8), gated pods' resources deducted (Volcano's pod scheduling
readiness design)."""

import pytest

from scheduler.api.status import Code
from scheduler.config import ConfigError
from tests.builders import GATE, node, pod, podgroup, queue
from tests.scheduler.plugins.sessions import configuration, open_session
from tests.scheduler.uthelper import Scenario, pg_status, waiting

FOREIGN = "example.com/quota"


def overcommit(factor: float | None = None):
    plugin = {"name": "overcommit", "arguments": {"overcommit-factor": factor}}
    return configuration([plugin if factor is not None else "overcommit"], actions="enqueue")


def volcano_case(min_resources: dict | None, factor: float, capability=None) -> bool:
    """Volcano's TestOvercommitPlugin: nodes of 2 CPU, 4Gi and 4 CPU, 16Gi; an Inqueue
    podgroup; JobEnqueued, then JobEnqueueable, for it."""
    scenario = Scenario(
        nodes=[node("n1", cpu="2", memory="4Gi"), node("n2", cpu="4", memory="16Gi")],
        queues=[queue("c1", capability=capability)],
        podgroups=[
            podgroup("pg", 2, namespace="test-namespace", queue="c1",
                     min_resources=min_resources, phase="Inqueue")
        ],
    )  # fmt: skip
    ssn = open_session(scenario, overcommit(factor))
    job = ssn.jobs["test-namespace/pg"]
    ssn.job_enqueued(job)
    return ssn.job_enqueueable(job).ok


@pytest.mark.parametrize(
    ("name", "min_resources", "factor", "capability", "admitted"),
    [
        ("overCommitFactor is more than 0", {"cpu": "2000m", "memory": "2G"}, 1.2, None, True),
        ("overCommitFactor is less than 0", {"cpu": "2000m", "memory": "2G"}, 0.8, None, True),
        ("when the required resources of pg are too large",
         {"cpu": "20000m", "memory": "20G"}, 1.2, None, False),
        ("when pg does not fill MinResources", None, 1.2, {"cpu": "200m", "memory": "0.5G"}, True),
    ],
)  # fmt: skip
def test_volcano_overcommit_cases(name, min_resources, factor, capability, admitted):
    assert volcano_case(min_resources, factor, capability) is admitted, name


def phase(client, key: str) -> str:
    return pg_status(client).get(key, {}).get("phase", "Pending")


def cluster(*podgroups: dict, pods: list | None = None, factor: float | None = None) -> Scenario:
    """6 CPU: 7.2 at the default factor."""
    return Scenario(
        nodes=[node("n1", cpu="2", memory="64Gi"), node("n2", cpu="4", memory="64Gi")],
        podgroups=list(podgroups),
        pods=pods or [],
        config=overcommit(factor),
    )


def test_jobs_are_admitted_up_to_the_overcommitted_total_then_held():
    scenario = cluster(
        podgroup("a", 1, min_resources={"cpu": "4"}),
        podgroup("b", 1, min_resources={"cpu": "3"}, created=1),
        podgroup("c", 1, min_resources={"cpu": "3"}, created=2),
        pods=[pod("a0", "4", group="a"), pod("b0", "3", group="b"), pod("c0", "3", group="c")],
    )
    report, client = scenario.run()
    assert [phase(client, f"ns/{g}") for g in "abc"] == ["Inqueue", "Inqueue", "Pending"]
    held = next(w for w in report.waiting if w.name == "c0").status
    assert held.code is Code.ADMISSION_HELD and held.plugin == "overcommit"
    assert waiting(report)["ns/c0"] == "resource in cluster is overused: overused cpu"


def test_what_the_pods_use_and_running_jobs_still_claim_counts():
    # 7.2 CPU less 2 in use: 5.2. The running job claims 1 more of its minResources of 3.
    scenario = cluster(
        podgroup("run", 2, min_resources={"cpu": "3"}, phase="Running"),
        podgroup("new", 1, min_resources={"cpu": "4.5"}),
        pods=[*(pod(f"r{i}", "1", group="run", node_name="n1") for i in range(2)),
              pod("new0", "4.5", group="new")],
    )  # fmt: skip
    _, client = scenario.run()
    assert phase(client, "ns/new") == "Pending"  # 4.5 + 1 > 5.2
    scenario.podgroups[1] = podgroup("new", 1, min_resources={"cpu": "4"})
    _, client = scenario.run()
    assert phase(client, "ns/new") == "Inqueue"  # 4 + 1 <= 5.2


def test_a_factor_below_one_is_replaced_by_the_default():
    scenario = cluster(
        podgroup("a", 1, min_resources={"cpu": "7"}), pods=[pod("a0", "7", group="a")], factor=0.5
    )
    _, client = scenario.run()
    assert phase(client, "ns/a") == "Inqueue"  # 7 <= 6 * 1.2


def test_gated_pods_of_an_admitted_job_do_not_keep_others_out_unless_gated_by_volcano():
    def held(gates, opt_in):
        admitted = podgroup("admitted", 1, min_resources={"cpu": "6"}, phase="Inqueue")
        pods = [pod("g0", "6", group="admitted", gates=gates, opt_in=opt_in),
                pod("n0", "2", group="new")]  # fmt: skip
        scenario = cluster(admitted, podgroup("new", 1, min_resources={"cpu": "2"}), pods=pods)
        _, client = scenario.run()
        return phase(client, "ns/new") == "Pending"

    assert not held([FOREIGN], opt_in=False)  # 6 deducted: 2 <= 7.2
    assert held([GATE], opt_in=True)  # only Volcano's gate: it counts, 6 + 2 > 7.2
    assert held([], opt_in=False)


def test_the_factor_must_be_a_number():
    with pytest.raises(ConfigError, match="argument overcommit-factor: expected a number"):
        configuration([{"name": "overcommit", "arguments": {"overcommit-factor": "high"}}])
