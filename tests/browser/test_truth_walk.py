"""The truth walk: a live `make run` stack (scripts/run_local.py under supervisord: the
simulated cluster with the demo scenario and --state, the scheduler and gates workers, beat,
the web server, the embedded Redis, SQLite) through minutes of churn — pods created, running,
finishing, failing, deleted and created again under the same name, a queue used and left, a
restart of the whole stack in the middle — and, at each step, every page read in Chromium and
compared with what the cluster's API says at that moment (tests/browser/truth.py).

The pages may lag the cluster by the time a cycle takes to be reported and stored: each page
is read again until it agrees, within ``LAG_S``; past that the test fails with the page's
differences from the API, in words.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
import yaml
from kubernetes import client

from tests.browser import truth
from tests.conftest import poll
from tests.dashboard.test_make_run_restarts import ROOT, Stack

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

PERIOD_S = 1.0  # SLUICE_CYCLE_PERIOD under make run (the default)
# How long a page may disagree with the cluster: a cycle runs every period, the gates worker
# stores its report, the page reads it; a page left open refreshes every 5 s (htmx). Measured
# on the development machine: a loaded page agrees within 2.5 s, a page left open within 5.5 s.
LAG_S = 10.0
CHURN = "churn"  # the namespace and the queue of 0.5 CPU
BRIEF = "brief"  # a queue without limits, for pods that finish


class Walk:
    """The stack, the cluster's API, the browser, and how long each page took to agree."""

    def __init__(self, stack: Stack, page, base: str) -> None:
        self.stack, self.page, self.base = stack, page, base
        self.cluster: truth.Cluster | None = None
        self.recorder = truth.PodRecorder(lambda: str(stack.kubeconfig))
        self.began = time.monotonic()
        self.lags: dict[str, float] = {}
        self.checked = 0
        self.hierarchy = True  # the capacity plugin's enableHierarchy, as the scheduler reports

    def connect(self) -> None:
        """A client for the cluster the kubeconfig names now (a restart picks a new port)."""
        if self.cluster is not None:
            self.cluster.close()
        self.cluster = truth.Cluster(str(self.stack.kubeconfig))

    def view(self) -> truth.ClusterView:
        assert self.cluster is not None
        view = self.cluster.view()
        self.recorder.record(view.pods)
        return view

    def agree(self, what: str, read: Callable[[], object], compare, on=None) -> None:
        """Read the page until it says what the API says, within LAG_S (``on``: the browser
        page read, when not the walk's own)."""
        started = time.monotonic()
        while True:
            view = self.view()
            shown = read()
            diffs = compare(shown, view) + self.banner(on or self.page)
            if not diffs:
                lag = time.monotonic() - started
                self.lags[what] = max(lag, self.lags.get(what, 0.0))
                self.checked += 1
                return
            if time.monotonic() - started > LAG_S:
                listing = "\n  ".join(diffs)
                pods = "\n  ".join(
                    f"{p.key} {p.state} queue={p.queue} node={p.node} uid={p.uid}"
                    for p in view.ours
                )
                pytest.fail(
                    f"{what} disagrees with the cluster's API for {LAG_S:g} s:\n  {listing}\n"
                    f"API's pods:\n  {pods}\nstack log:\n{self.stack.tail()[-1500:]}"
                )
            time.sleep(0.5)

    @staticmethod
    def banner(page) -> list[str]:
        """Every page carries the scheduler's banner, and the scheduler has not stopped."""
        out = []
        if page.locator("#scheduler-banner").count() != 1:
            out.append(f"{page.url}: no scheduler banner")
        if page.locator("#scheduler-stopped, #cycle-failure").count():
            out.append(f"{page.url}: the banner says the scheduler stopped or fails")
        return out

    # --- every page ----------------------------------------------------------------------

    def every_page(self, pods: list[str], gone: dict[str, str]) -> None:
        """Every page against the API: Overview, Queues and each queue's page, Pods with each
        state filter, the pages of ``pods`` (by name) and of ``gone`` (name -> UID of a pod
        no longer in the cluster), Scheduler, Autoscaler, Namespaces, History, Risks."""
        page, base = self.page, self.base
        print(f"truth walk at {time.monotonic() - self.began:.0f} s: every page", flush=True)
        self.hierarchy = hierarchy = self.scheduler_page()
        self.agree(
            "Overview",
            lambda: truth.read_overview(page, base),
            lambda shown, view: truth.compare_overview(shown, view, hierarchy),
        )
        self.agree(
            "Queues",
            lambda: truth.read_queue_tree(page, base),
            lambda shown, view: truth.compare_queue_tree(shown, view, hierarchy),
        )
        view = self.view()
        for name in sorted(view.listed_queues() - view.missing_queues()):
            self.agree(
                f"Queue {name}",
                lambda name=name: truth.read_queue_page(page, base, name),
                lambda shown, view, name=name: truth.compare_queue_page(
                    shown, name, view, hierarchy
                ),
            )
        for name in sorted(view.missing_queues()):
            self.agree(
                f"Queue {name} (no such Queue)",
                lambda name=name: truth.read_queue_page(page, base, name),
                lambda shown, view, name=name: truth.compare_missing_queue(shown, name, view),
            )
        self.agree(
            "Pods",
            lambda: truth.read_pods_page(page, base),
            lambda shown, view: truth.compare_pods(*shown, view),
        )
        for state in truth.STATES:
            self.agree(
                f"Pods ({state})",
                lambda state=state: truth.read_pods_page(page, base, state.lower()),
                lambda shown, view, state=state: truth.compare_pods(*shown, view, state),
            )
        self.agree(
            "Pods (Deleted)",
            lambda: truth.read_pods_page(page, base, "deleted"),
            lambda shown, view: truth.compare_deleted(shown[0], self.recorder.gone(view.pods)),
        )
        for key in pods:
            self.agree(
                f"Pod {key}",
                lambda key=key: truth.read_pod_page(page, base, key),
                lambda shown, view, key=key: truth.compare_pod_page(
                    shown, next((p for p in view.ours if p.key == key), None), key
                ),
            )
        for key, uid in gone.items():
            self.agree(
                f"Pod {key} (UID {uid}, gone)",
                lambda key=key, uid=uid: truth.read_pod_page(page, base, key, uid),
                lambda shown, view, key=key: truth.compare_pod_page(shown, None, key),
            )
        self.agree(
            "Namespaces",
            lambda: truth.read_namespaces(page, base),
            truth.compare_namespaces,
        )
        self.agree(
            "Autoscaler",
            lambda: truth.read_autoscaler(page, base),
            truth.compare_autoscaler,
        )
        self.agree("History", lambda: truth.read_history(page, base), truth.compare_history)
        self.agree("Risks", lambda: truth.read_risks(page, base), truth.compare_risks)

    def scheduler_page(self) -> bool:
        """The Scheduler page says what the scheduler runs with (make run: act mode, a cycle
        every second, scheduler name volcano, a cycle just now); whether the capacity plugin
        runs with enableHierarchy, from the configuration it reports."""

        def compare(shown: dict, view) -> list[str]:
            out = []
            expected = {"Mode": "act", "Period": f"{PERIOD_S:g} s", "Scheduler names": "volcano"}
            for key, value in expected.items():
                if shown.get(key) != value:
                    out.append(
                        f"Scheduler page: {key} {shown.get(key)!r}, the worker runs {value!r}"
                    )
            if shown["stopped"] or shown["failing"]:
                out.append(f"Scheduler page: stopped or failing: {shown['banner']}")
            if " 0 s ago" not in shown["banner"] and not any(
                f" {n} s ago" in shown["banner"] for n in range(1, int(LAG_S))
            ):
                out.append(f"banner: no cycle within {LAG_S:g} s: {shown['banner']!r}")
            return out

        self.agree("Scheduler", lambda: truth.read_scheduler(self.page, self.base), compare)
        self.page.goto(self.base + "/scheduler/")
        reported = yaml.safe_load(self.page.locator("pre.config-text").text_content())
        plugins = [p for tier in reported["tiers"] for p in tier["plugins"]]
        capacity = next(p for p in plugins if p["name"] in ("capacity", "proportion"))
        return bool(capacity.get("enableHierarchy"))

    def timelines(self) -> None:
        """Each pod's page: one "Now" line, the pod's UID, a timeline that starts with its
        creation, never says a live pod was deleted, and has no transition from a state to
        the same state."""
        view = self.view()
        for pod in view.ours:
            data = truth.read_pod_page(self.page, self.base, pod.key)
            assert data["uid"] == pod.uid, (pod, data)
            assert len(data["now"]) == 1, (pod, data)
            kinds = [t["kind"] for t in data["timeline"]]
            assert kinds and kinds[0] == "created", (pod, data["timeline"])
            assert "deleted" not in kinds, f"{pod.key} exists (UID {pod.uid}): {data['timeline']}"
            for entry in data["timeline"]:
                moved = re.search(r"\((\w+) → (\w+)\)", entry["text"])
                assert not moved or moved.group(1) != moved.group(2), (pod.key, entry)


# --- the cluster's churn, through its API --------------------------------------------------


def apis(stack: Stack) -> tuple[client.CoreV1Api, client.CustomObjectsApi]:
    api = truth.api_client(str(stack.kubeconfig))
    return client.CoreV1Api(api), client.CustomObjectsApi(api)


def create_queue(custom: client.CustomObjectsApi, name: str, spec: dict) -> None:
    custom.create_cluster_custom_object(
        "scheduling.volcano.sh", "v1beta1", "queues",
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
         "metadata": {"name": name}, "spec": {"weight": 1, "reclaimable": False, **spec}},
    )  # fmt: skip


def create_pod(
    core: client.CoreV1Api,
    name: str,
    *,
    queue: str | None = CHURN,
    duration: float | None = None,
    node: str | None = None,
    cpu: str = "100m",
    scheduler: str = "volcano",
) -> str:
    """A pod in namespace ``churn`` (opted in: the webhook gates it); its UID. ``duration``:
    the simulated kubelet runs it that long, then it Succeeded; ``node``: bound at creation."""
    annotations = {}
    if queue:
        annotations[truth.QUEUE_ANNOTATION] = queue
    if duration is not None:
        annotations["sim.sluice.io/duration"] = str(duration)
    spec = {
        "schedulerName": scheduler,
        "terminationGracePeriodSeconds": 2,
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
            }
        ],
    }
    if node:
        spec["nodeName"] = node
    body = {"metadata": {"name": name, "annotations": annotations}, "spec": spec}
    return core.create_namespaced_pod(CHURN, body).metadata.uid


def delete_pod(core: client.CoreV1Api, name: str) -> str:
    """Delete ``churn/name`` (2 s of grace) and wait until the API no longer has it; its UID."""
    uid = core.read_namespaced_pod(name, CHURN).metadata.uid
    core.delete_namespaced_pod(name, CHURN)

    def gone() -> bool:
        try:
            return core.read_namespaced_pod(name, CHURN).metadata.uid != uid
        except client.ApiException as exc:
            return exc.status == 404

    assert poll(gone, timeout=30, interval=0.25), f"{CHURN}/{name} not gone after 30 s"
    return uid


def started(stack: Stack, since: float) -> bool:
    """The stack is up: the simulated cluster answers and a cycle was stored since ``since``."""
    return stack.cluster_id() is not None and stack.successful_cycles_since(since) > 0


def test_every_page_tells_what_the_cluster_says_through_churn_and_a_restart(
    tmp_path, free_port, page
):
    stack = Stack(tmp_path, free_port)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT, env=stack.env, check=True, capture_output=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{free_port}"
    walk = Walk(stack, page, base)
    began = time.time()
    stack.start()
    print()
    try:
        assert poll(lambda: started(stack, 0), timeout=120, interval=0.5), stack.tail()
        walk.connect()
        walk.recorder.start()
        core, custom = apis(stack)
        # The demo creates its 20 pods within 30 s; its reclaim evicts batch pods for the web
        # gang (120 s of grace), its highmem pods make the autoscaler add a node (60 s).
        assert poll(lambda: len(walk.view().ours) >= 20, timeout=90, interval=1), stack.tail()

        # Round 1: a namespace opted in to the queue-allocation gate; a queue of 0.5 CPU with
        # more pods than it holds (one stays gated) and a queue without a limit for pods that
        # finish after 5 s; a pod naming no queue (the implicit queue "default"), one naming a
        # queue that does not exist, one bound by nodeName to a node too small for it (the
        # kubelet fails it), one for another scheduler (not Sluice's: no page lists it).
        core.create_namespace({"metadata": {"name": CHURN, "labels": {truth.GATE: "true"}}})
        create_queue(custom, CHURN, {"capability": {"cpu": "500m", "memory": "1Gi"}})
        create_queue(custom, BRIEF, {})
        # A CPU capability below zero: Volcano's capacity plugin reads it as no limit.
        create_queue(custom, "odd", {"capability": {"cpu": "-5", "memory": "2Gi"}})
        for i in range(3):
            create_pod(core, f"short-{i}", queue=BRIEF, duration=5)
        for i in range(6):
            create_pod(core, f"long-{i}")
        create_pod(core, "loner", queue=None)
        create_pod(core, "misfit", node="cpu-3", cpu="16")
        create_pod(core, "elsewhere", scheduler="default-scheduler")
        create_pod(core, "stray", queue="ghost")  # a queue that does not exist
        walk.every_page(pods=["churn/long-0", "churn/loner", "churn/misfit"], gone={})

        # Round 2: pods deleted (running, finished, the only one of queue "default"), one
        # created again under the same name.
        gone = {"churn/long-1": delete_pod(core, "long-1")}
        gone["churn/short-0"] = delete_pod(core, "short-0")
        delete_pod(core, "loner")
        first_long_0 = delete_pod(core, "long-0")
        create_pod(core, "long-0")
        walk.every_page(pods=["churn/long-0", "churn/short-1"], gone=gone)
        page.goto(f"{base}/pods/churn/long-0/")
        others = page.locator("ul.other-pods li").all_inner_texts()
        assert len(others) == 1 and first_long_0 in others[0] and "Deleted" in others[0], others

        # Round 3: the demo's scale-up has landed (a node with the autoscaler's record).
        assert poll(lambda: walk.view().scale_up_nodes, timeout=150, interval=1), stack.tail()
        walk.every_page(pods=["prod/highmem-0", "prod/web-1"], gone=gone)

        # The whole stack stopped and started again: the same simulated cluster (--state),
        # the same database. Nothing piles up: one row per pod, each gone pod Deleted once.
        before = walk.view()
        stack.stop()
        stopped = time.time()
        stack.start()
        assert poll(lambda: started(stack, stopped), timeout=120, interval=0.5), stack.tail()
        walk.connect()
        core, custom = apis(stack)
        assert {p.uid for p in walk.view().pods} <= {p.uid for p in before.pods}
        walk.every_page(pods=["churn/long-0", "churn/misfit"], gone=gone)

        # Round 4, after the restart, with pages left open: the Overview's live section and a
        # pod's page follow the cluster without a reload (htmx, every 5 s).
        page.goto(base + "/")
        create_pod(core, "late")  # its queue is full: gated
        walk.agree(
            "Overview left open",
            lambda: truth.read_overview(page, None),
            lambda shown, view: truth.compare_overview(shown, view, walk.hierarchy),
        )
        create_pod(core, "short-3", queue=BRIEF, duration=8)
        walk.agree(
            "Pod churn/short-3",
            lambda: truth.read_pod_page(page, base, "churn/short-3"),
            lambda shown, view: truth.compare_pod_page(
                shown, view.pod("churn/short-3"), "churn/short-3"
            ),
        )
        # The Pods list, left open in a window of its own while short-3 runs and finishes.
        other = page.context.browser.new_context(viewport={"width": 1280, "height": 900})
        listing = other.new_page()
        try:
            listing.goto(base + "/pods/")
            assert poll(lambda: walk.view().pod("churn/short-3").state == "Succeeded", timeout=60)
            walk.agree(
                "Pod churn/short-3 left open",
                lambda: truth.read_pod_page(page, None),
                lambda shown, view: truth.compare_pod_page(
                    shown, view.pod("churn/short-3"), "churn/short-3"
                ),
            )
            walk.agree(
                "Pods left open",
                lambda: truth.read_pods_page(listing, None),
                lambda shown, view: truth.compare_pods(*shown, view),
                on=listing,
            )
        finally:
            other.close()
        gone["churn/long-0"] = delete_pod(core, "long-0")
        create_pod(core, "long-0")
        gone["churn/misfit"] = delete_pod(core, "misfit")
        walk.every_page(pods=["churn/long-0", "churn/late", "prod/web-0"], gone=gone)
        walk.timelines()
    finally:
        walk.recorder.stop()
        if walk.cluster is not None:
            walk.cluster.close()
        stack.stop()
    took = time.time() - began
    slowest = sorted(walk.lags.items(), key=lambda kv: -kv[1])[:5]
    print(f"\ntruth walk: {walk.checked} page checks in {took:.0f} s; slowest to agree: "
          + ", ".join(f"{k} {v:.1f} s" for k, v in slowest))  # fmt: skip
