"""The Namespaces page in observe mode: Sluice writes nothing, so it offers no opt-in toggle and
the toggle's URL says why without asking the cluster anything (the observe overlay's role may
not patch a namespace: deploy/overlays/observe/clusterrole.yaml)."""

from __future__ import annotations

import pytest

from dashboard import kube
from dashboard.models import NamespaceOptInChange
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from tests.builders import body, namespace
from tests.scheduler.conftest import sim  # noqa: F401 - sim is a fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(settings, sim, tmp_path):  # noqa: F811
    settings.SLUICE_MODE = "observe"
    settings.SLUICE_KUBECONFIG = str(sim.server.write_kubeconfig(tmp_path / "kubeconfig"))
    kube.api_client.cache_clear()
    sim.core.create_namespace(body(namespace("batch")))
    yield sim
    kube.api_client.cache_clear()


def test_observe_mode_offers_no_toggle(cluster, admin_client):
    page = admin_client.get("/namespaces/").content.decode()
    assert 'data-namespace="batch"' in page
    assert "read only (observe mode)" in page
    assert "/namespaces/batch/opt-in/" not in page


@pytest.mark.parametrize("method", ["get", "post"])
def test_the_toggle_url_says_why_and_changes_nothing(cluster, admin_client, method):
    requests = []
    cluster.server.recorder = requests.append
    answer = getattr(admin_client, method)(
        "/namespaces/batch/opt-in/?enabled=true", {"enabled": "true", "confirm": "on"}
    )
    assert answer.status_code == 409
    assert "Sluice runs in observe mode" in answer.content.decode()
    assert requests == []  # the cluster was not asked
    labels = cluster.store.get("namespaces", "", "batch")["metadata"].get("labels") or {}
    assert QUEUE_ALLOCATION_GATE not in labels
    assert not NamespaceOptInChange.objects.exists()
