"""The namespace toggle says what went wrong in words, with the status it deserves (Part 11:
toggling a namespace that does not exist answered 503 "cluster unreachable" with the kubernetes
client's raw exception). Against the simulated API server through the real kubernetes client."""

from __future__ import annotations

import socket

import pytest
import yaml
from django.contrib.auth.models import Permission, User

from dashboard import kube
from dashboard.models import NamespaceOptInChange
from simcluster.api.server import kubeconfig
from tests.builders import body, namespace
from tests.scheduler.conftest import sim  # noqa: F401 - sim is a fixture

pytestmark = pytest.mark.django_db

RAW = ("ApiException", "HTTP response headers", "HTTPConnectionPool", "Max retries", "urllib3",
       "Traceback", "(404)\nReason")  # fmt: skip


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
    kube.api_client.cache_clear()


@pytest.fixture
def operator(client):
    user = User.objects.create_user("olivia", password="pw-operator-1")
    user.user_permissions.add(Permission.objects.get(codename="toggle_namespace_opt_in"))
    client.force_login(user)
    return user


def no_raw_exception(page: str) -> None:
    for raw in RAW:
        assert raw not in page, raw


def test_asking_to_toggle_a_namespace_that_does_not_exist_is_a_404_in_words(
    client, cluster, operator
):
    response = client.get("/namespaces/nope/opt-in/?enabled=true")
    page = response.content.decode()

    assert response.status_code == 404
    assert "<h1>Namespace nope does not exist</h1>" in page
    assert "Namespace nope does not exist: there is nothing to opt in." in page
    assert 'name="confirm"' not in page  # nothing to confirm
    no_raw_exception(page)


def test_toggling_a_namespace_that_does_not_exist_is_a_404_and_records_nothing(
    client, cluster, operator
):
    response = client.post("/namespaces/nope/opt-in/", {"enabled": "true", "confirm": "on"})
    page = response.content.decode()

    assert response.status_code == 404
    assert "Namespace nope does not exist: there is nothing to opt in." in page
    assert "cluster unreachable" not in page
    no_raw_exception(page)
    assert not NamespaceOptInChange.objects.exists()
    # The namespace that exists is still toggled as before.
    assert client.get("/namespaces/batch/opt-in/?enabled=true").status_code == 200


def test_a_cluster_that_does_not_answer_is_a_503_in_words(client, operator, settings, tmp_path):
    with socket.socket() as closed:  # a port nothing listens on once closed
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig(f"http://127.0.0.1:{port}")))
    settings.SLUICE_KUBECONFIG = str(path)
    settings.SLUICE_KUBE_TIMEOUT = 1
    kube.api_client.cache_clear()
    try:
        response = client.post("/namespaces/batch/opt-in/", {"enabled": "true", "confirm": "on"})
    finally:
        kube.api_client.cache_clear()
    page = response.content.decode()

    assert response.status_code == 503
    refused = f"cluster unreachable: label namespace batch: 127.0.0.1:{port}: connection refused"
    assert refused in page
    no_raw_exception(page)
    assert not NamespaceOptInChange.objects.exists()


def test_a_cluster_that_accepts_and_never_answers_is_a_503_saying_so(
    client, operator, settings, tmp_path
):
    with socket.socket() as silent:  # listens, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig(f"http://127.0.0.1:{port}")))
        settings.SLUICE_KUBECONFIG = str(path)
        settings.SLUICE_KUBE_TIMEOUT = 0.5
        kube.api_client.cache_clear()
        try:
            response = client.post(
                "/namespaces/batch/opt-in/", {"enabled": "true", "confirm": "on"}
            )
        finally:
            kube.api_client.cache_clear()
    page = response.content.decode()

    assert response.status_code == 503
    assert (
        f"cluster unreachable: label namespace batch: 127.0.0.1:{port}: no answer within 0.5 s"
        in page
    )
    no_raw_exception(page)
