"""Adversary, Part 14: switching between the observe and act overlays on a running install.

``kubectl apply -k`` changes a Deployment's pods only when its pod template changes; a
container reads ``envFrom`` (the ConfigMap sluice-env, where each overlay puts SLUICE_MODE) when
it starts, never again. Kustomize makes a template change when a generated ConfigMap's content
changes by giving the ConfigMap a name with a content hash, which every reference follows; the
base turns that off (``generatorOptions: disableNameSuffixHash: true``), so the ConfigMap keeps
its name and the pod templates stay byte for byte the same across the overlays.
"""

from __future__ import annotations

import pytest

from tests.deploy.manifests import find, render

# The processes that read SLUICE_MODE: the scheduler workers decide act or observe
# (dashboard/tasks/scheduling.py), the pages say which mode runs.
MODE_READERS = ("sluice-scheduler", "sluice-web")


def pod_template(overlay: str, deployment: str) -> dict:
    return find(render(overlay), "Deployment", deployment)["spec"]["template"]


def test_the_overlays_set_different_modes():
    """The premise: the overlays' sluice-env ConfigMaps differ in SLUICE_MODE only."""
    observe = find(render("observe"), "ConfigMap", "sluice-env")["data"]
    act = find(render("act"), "ConfigMap", "sluice-env")["data"]
    assert observe["SLUICE_MODE"] == "observe"
    assert act["SLUICE_MODE"] == "act"
    assert {k: v for k, v in observe.items() if k != "SLUICE_MODE"} == {
        k: v for k, v in act.items() if k != "SLUICE_MODE"
    }


@pytest.mark.parametrize("deployment", MODE_READERS)
def test_applying_the_other_overlay_restarts_the_pods_that_read_the_mode(deployment):
    """Promise (README "Run it on your cluster", Act mode): "Switch. kubectl apply -k
    deploy/overlays/act ... SLUICE_MODE becomes act"; and "Roll back ... kubectl apply -k
    deploy/overlays/observe (writes stop)".

    Both overlays render the same pod template for the Deployment: applying the other overlay
    rewrites the ConfigMap sluice-env in place and leaves the Deployment unchanged, so no pod
    restarts and every running scheduler worker keeps the SLUICE_MODE it started with. After
    the switch to act, Sluice keeps observing (nothing is bound, no gate removed) though the
    ClusterRole now allows the writes; after the roll back, the scheduler keeps acting and
    each write is refused by the observe ClusterRole (403 every cycle). Fault:
    deploy/base/kustomization.yaml, ``generatorOptions: disableNameSuffixHash: true`` applied
    to the ConfigMap sluice-env (no hash suffix, so no template change), and no other
    template change (an annotation carrying the mode) in the overlays."""
    observe = pod_template("observe", deployment)
    act = pod_template("act", deployment)
    assert observe != act, (
        f"{deployment}: the same pod template in observe and act: `kubectl apply -k` of the "
        "other overlay restarts no pod, which keeps the SLUICE_MODE it started with"
    )
