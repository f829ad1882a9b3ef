"""Part 11's adversary: the namespace toggle when the API server refuses.

README, A tour of the pages, Namespaces: "the API server refusing is a 502 naming why
(forbidden, conflict, invalid, throttled); only a cluster that does not answer is a 503".
The simulated API server refuses every write with its seeded faults (``simcluster.faults``:
409 Conflict, 429 Too Many Requests, 500), reached by the web through the kubernetes client;
the toggle is posted by a user with the permission, through Django's test client.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User

from dashboard import kube
from dashboard.models import NamespaceOptInChange
from simcluster.faults import FaultConfig, Faults
from tests.builders import body, namespace
from tests.scheduler.conftest import sim  # noqa: F401 - sim is a fixture

pytestmark = pytest.mark.django_db

RAW = ("ApiException", "HTTP response headers", "HTTPConnectionPool", "Traceback", "urllib3")


@pytest.fixture(autouse=True)
def acting(settings):
    """The toggle writes to the cluster: it is offered in act mode only (observe mode: 409)."""
    settings.SLUICE_MODE = "act"


@pytest.fixture
def cluster(settings, sim, tmp_path):  # noqa: F811
    settings.SLUICE_KUBECONFIG = str(sim.server.write_kubeconfig(tmp_path / "kubeconfig"))
    kube.api_client.cache_clear()
    sim.core.create_namespace(body(namespace("batch")))
    yield sim
    sim.server.faults = None
    kube.api_client.cache_clear()


@pytest.fixture
def operator(client):
    user = User.objects.create_user("olivia", password="pw-operator-1")
    user.user_permissions.add(Permission.objects.get(codename="toggle_namespace_opt_in"))
    client.force_login(user)
    return user


@pytest.mark.parametrize(
    ("fault", "words"),
    [("conflict", "409 Conflict"), ("throttle", "429 Too Many Requests"),
     ("server_error", "API server failed (500")],
)  # fmt: skip
def test_a_refused_toggle_is_a_502_in_words_and_records_nothing(
    client, cluster, operator, fault, words
):
    """Held when tried: each refusal is a 502 naming it, no raw client exception, no audit
    row, and the namespace keeps its label."""
    cluster.server.faults = Faults(FaultConfig(**{fault: 1.0}))
    response = client.post("/namespaces/batch/opt-in/", {"enabled": "true", "confirm": "on"})
    page = response.content.decode()
    assert response.status_code == 502, page
    assert words in page
    for raw in RAW:
        assert raw not in page, raw
    assert not NamespaceOptInChange.objects.exists()
    cluster.server.faults = None
    labels = cluster.core.read_namespace("batch").metadata.labels or {}
    assert "scheduling.volcano.sh/queue-allocation-gate" not in labels
