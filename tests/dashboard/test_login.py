"""Who reads the pages: open by default, closed by SLUICE_REQUIRE_LOGIN (but /healthz and the
webhook); the /login/ and /logout/ pages; login throttling (django-axes)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import RequestFactory

from dashboard.middleware import client_ip

pytestmark = pytest.mark.django_db

READ_PAGES = [
    "/",
    "/queues/",
    "/queues/prod/",
    "/pods/",
    "/pods/batch/etl-0/",
    "/namespaces/",
    "/history/",
    "/risks/",
    "/scheduler/",
    "/autoscaler/",
]
PASSWORD = "correct horse battery staple"


@pytest.fixture(autouse=True)
def no_cluster(settings, tmp_path):
    from dashboard import kube

    settings.SLUICE_KUBECONFIG = str(tmp_path / "absent-kubeconfig")
    kube.api_client.cache_clear()
    yield
    kube.api_client.cache_clear()


@pytest.fixture
def require_login(settings):
    settings.SLUICE_REQUIRE_LOGIN = True


@pytest.fixture
def alice():
    return get_user_model().objects.create_user("alice", password=PASSWORD)


def log_in(client, username: str, password: str, **extra):
    return client.post(
        "/login/", {"username": username, "password": password, "next": "/history/"}, **extra
    )


def test_pages_are_readable_anonymously_by_default(client, settings):
    assert settings.SLUICE_REQUIRE_LOGIN is False
    for url in ["/", "/queues/", "/pods/", "/history/", "/risks/", "/scheduler/"]:
        assert client.get(url).status_code == 200, url


@pytest.mark.parametrize("url", READ_PAGES)
def test_require_login_sends_anonymous_visitors_to_log_in(client, require_login, url):
    response = client.get(url)

    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={url}"


def test_require_login_sends_an_htmx_refresh_to_log_in_as_a_whole_page(client, require_login):
    response = client.get(
        "/pods/?state=gated",
        headers={"HX-Request": "true", "HX-Current-URL": "http://testserver/pods/?state=gated"},
    )

    assert response.status_code == 200
    assert response["HX-Redirect"] == "/login/?next=/pods/%3Fstate%3Dgated"

    # The header is the client's: only its path and query are taken, never another host.
    response = client.get(
        "/queues/", headers={"HX-Request": "true", "HX-Current-URL": "https://evil.example/x"}
    )
    assert response["HX-Redirect"] == "/login/?next=/x"


def test_require_login_leaves_health_webhook_and_login_open(client, require_login):
    assert client.get("/healthz").status_code in (200, 503)  # an answer, not a redirect
    webhook = client.post("/webhooks/mutate-pods", b"{}", content_type="application/json")
    assert webhook.status_code == 400  # the webhook's own refusal of an empty review
    assert client.get("/login/").status_code == 200
    assert client.get("/admin/login/").status_code == 200


def test_require_login_lets_a_logged_in_user_read_every_page(client, require_login, alice):
    client.force_login(alice)
    for url in ["/", "/queues/", "/pods/", "/history/", "/risks/", "/scheduler/"]:
        assert client.get(url).status_code == 200, url


def test_the_login_page_is_a_page_of_the_dashboard(client):
    response = client.get("/login/?next=/history/")

    assert response.status_code == 200
    html = response.content.decode()
    assert '<a class="brand"' in html and "sluice/sluice.css" in html  # the base template
    assert 'name="username"' in html and 'name="password"' in html
    assert 'name="next" value="/history/"' in html


def test_logging_in_and_out(client, alice):
    response = log_in(client, "alice", PASSWORD)

    assert response.status_code == 302 and response["Location"] == "/history/"
    assert "alice" in client.get("/").content.decode()
    assert client.post("/logout/").status_code == 302
    assert "_auth_user_id" not in client.session


def test_a_wrong_password_says_so(client, alice):
    response = log_in(client, "alice", "wrong")

    assert response.status_code == 200
    assert "didn't match" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_the_former_login_address_redirects_to_the_login_page(client, require_login):
    response = client.get("/accounts/login/?next=/pods/")

    assert response.status_code == 302 and response["Location"] == "/login/?next=/pods/"


def test_failed_logins_lock_the_username_out_from_that_client(client, alice, settings):
    limit = settings.AXES_FAILURE_LIMIT
    assert limit == 5
    statuses = [log_in(client, "alice", f"guess-{n}").status_code for n in range(limit)]
    assert statuses == [200] * (limit - 1) + [429]

    # Locked: even the right password is refused, with a page that says why and for how long.
    locked = log_in(client, "alice", PASSWORD)
    assert locked.status_code == 429
    text = locked.content.decode()
    assert "Too many failed logins" in text and "15 minutes" in text
    assert "_auth_user_id" not in client.session

    # Another client, or another username from this one, is not locked.
    assert log_in(client, "alice", PASSWORD, REMOTE_ADDR="198.51.100.9").status_code == 302
    client.post("/logout/")
    get_user_model().objects.create_user("bob", password=PASSWORD)
    assert log_in(client, "bob", PASSWORD).status_code == 302


def test_a_successful_login_resets_the_failure_count(client, alice, settings):
    limit = settings.AXES_FAILURE_LIMIT
    for n in range(limit - 1):
        assert log_in(client, "alice", f"guess-{n}").status_code == 200
    assert log_in(client, "alice", PASSWORD).status_code == 302
    client.post("/logout/")

    for n in range(limit - 1):
        assert log_in(client, "alice", f"again-{n}").status_code == 200


def test_the_client_behind_trusted_proxies_is_the_one_the_outermost_proxy_saw(settings):
    request = RequestFactory().get(
        "/login/",
        REMOTE_ADDR="10.0.0.5",  # the ingress
        HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7",  # forged by the client, then the ingress's
    )

    settings.SLUICE_TRUSTED_PROXY_COUNT = 0
    assert client_ip(request) == "10.0.0.5"
    settings.SLUICE_TRUSTED_PROXY_COUNT = 1
    assert client_ip(request) == "203.0.113.7"
    settings.SLUICE_TRUSTED_PROXY_COUNT = 3  # fewer hops than proxies: the TCP peer
    assert client_ip(request) == "10.0.0.5"
