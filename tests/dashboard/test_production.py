"""README's production commands, run as written: `check --deploy` clean with its environment,
and gunicorn (DEBUG off) serving a styled page — stylesheet, htmx and Plotly through WhiteNoise
— to a client behind the TLS ingress it describes."""

from __future__ import annotations

import gzip
import http.client
import os
import re
import secrets
import shlex
import subprocess
import sys
from http.cookies import SimpleCookie
from pathlib import Path

import pytest
import yaml

from tests.conftest import pick_free_port, poll

ROOT = Path(__file__).resolve().parents[2]
HASHED = re.compile(r"\.[0-9a-f]{12}\.(css|js)$")
# Set per test rather than as README shows them: a secret, a database, a broker, the cluster.
PER_TEST = ("SECRET_KEY", "DATABASE_URL", "REDIS_URL", "SLUICE_KUBECONFIG", "SLUICE_RUN_DIR")


def readme_production_block() -> list[str]:
    """The lines of the shell block in README's "Production" section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Production\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "README's Production section has no ```sh block"
    return [line.strip() for line in block.group(1).splitlines() if line.strip()]


def readme_environment() -> dict[str, str]:
    env = {}
    for line in readme_production_block():
        if line.startswith("export "):
            for assignment in shlex.split(line)[1:]:
                name, _, value = assignment.partition("=")
                env[name] = value
    return env


def readme_commands() -> list[list[str]]:
    return [
        shlex.split(line)
        for line in readme_production_block()
        if not line.startswith(("export ", "#"))
    ]


def production_env(tmp_path: Path, **overrides: str) -> dict[str, str]:
    """The process environment README documents for production, with this test's own secret,
    SQLite database, unreachable broker, absent cluster and static directory."""
    inherited = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLUICE_", "SECURE_", "CSRF_", "SESSION_"))
        # tests/conftest.py sets DJANGO_ALLOW_ASYNC_UNSAFE for Playwright; never in production
        and k not in {"DEBUG", "ALLOWED_HOSTS", "DJANGO_ALLOW_ASYNC_UNSAFE", *PER_TEST}
    }
    env = {**inherited, **readme_environment()}
    env.update(
        SECRET_KEY=secrets.token_urlsafe(50),
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        REDIS_URL=f"redis://127.0.0.1:{pick_free_port()}/0",
        SLUICE_KUBECONFIG=str(tmp_path / "absent-kubeconfig"),
        SLUICE_RUN_DIR=str(tmp_path / "run"),
    )
    env.update(overrides)
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_readme_documents_debug_off_and_every_security_setting():
    env = readme_environment()
    assert env["DEBUG"] == "false"
    for name in (
        "SECURE_SSL_REDIRECT",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS",
        "SECURE_HSTS_PRELOAD",
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SLUICE_REQUIRE_LOGIN",
    ):
        assert env[name] == "true", name
    assert int(env["SECURE_HSTS_SECONDS"]) >= 31536000
    assert env["SECURE_PROXY_SSL_HEADER"] == "HTTP_X_FORWARDED_PROTO,https"
    assert env["CSRF_TRUSTED_ORIGINS"].startswith("https://")
    assert [words[:3] for words in readme_commands()] == [
        ["python", "manage.py", "migrate"],
        ["python", "manage.py", "collectstatic"],
        ["python", "manage.py", "check"],
        ["gunicorn", "dashboard.wsgi:application", "--bind"],
    ]


def test_dockerfile_and_compose_run_the_documented_gunicorn_command():
    gunicorn = readme_commands()[-1]
    dockerfile = (ROOT / "Dockerfile").read_text()
    cmd = re.search(r"^CMD (\[.*\])$", dockerfile, re.M)
    assert cmd and yaml.safe_load(cmd.group(1)) == gunicorn
    assert "manage.py collectstatic --noinput" in dockerfile

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    web = shlex.split(compose["services"]["web"]["command"])
    assert web[:2] == ["sh", "-c"]
    assert shlex.split(web[2].split("&&")[-1]) == gunicorn


def test_check_deploy_passes_with_the_documented_production_environment(tmp_path):
    env = production_env(tmp_path)
    collect = manage(env, "collectstatic", "--noinput")
    assert collect.returncode == 0, collect.stderr

    check = manage(env, "check", "--deploy", "--fail-level", "WARNING")

    assert check.returncode == 0, check.stdout + check.stderr
    assert "System check identified no issues" in check.stdout


def test_check_deploy_names_what_production_lacks(tmp_path):
    """DEBUG off with nothing else set: every missing setting is reported by its id, and so
    are static files never collected."""
    env = production_env(tmp_path)
    env = {k: v for k, v in env.items() if not k.startswith(("SECURE_", "CSRF_", "SESSION_"))}

    check = manage(env, "check", "--deploy", "--fail-level", "WARNING")

    assert check.returncode != 0
    for check_id in ("W004", "W008", "W012", "W016", "sluice.W001"):
        assert check_id in check.stderr, check_id


def settings_in_a_process(
    tmp_path: Path, setting: str = "SECURE_PROXY_SSL_HEADER", **env: str
) -> subprocess.CompletedProcess:
    code = f"from django.conf import settings; print(settings.{setting})"
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env=production_env(tmp_path, DJANGO_SETTINGS_MODULE="dashboard.settings", **env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_proxy_header_is_read_in_either_spelling(tmp_path):
    for spelling in ("HTTP_X_FORWARDED_PROTO,https", "X-Forwarded-Proto, https"):
        done = settings_in_a_process(tmp_path, SECURE_PROXY_SSL_HEADER=spelling)
        assert done.stdout.strip() == "('HTTP_X_FORWARDED_PROTO', 'https')", done.stderr

    done = settings_in_a_process(tmp_path, SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto")
    assert done.returncode != 0 and "expected HEADER,VALUE" in done.stderr


def test_login_throttling_is_read_from_the_environment(tmp_path):
    done = settings_in_a_process(
        tmp_path,
        "AXES_FAILURE_LIMIT, settings.AXES_COOLOFF_TIME",
        SLUICE_LOGIN_FAILURE_LIMIT="3",
        SLUICE_LOGIN_COOLOFF_MINUTES="90",
    )
    assert done.stdout.strip() == "3 1:30:00", done.stderr

    for name, value in [
        ("SLUICE_LOGIN_FAILURE_LIMIT", "0"),
        ("SLUICE_LOGIN_FAILURE_LIMIT", "nan"),
        ("SLUICE_LOGIN_COOLOFF_MINUTES", "0"),
        ("SLUICE_LOGIN_COOLOFF_MINUTES", "inf"),
    ]:
        done = settings_in_a_process(tmp_path, **{name: value})
        assert done.returncode != 0 and "SLUICE_LOGIN_FAILURE_LIMIT must be" in done.stderr, value


class Ingress:
    """Requests to gunicorn as a TLS ingress forwards them: the public Host, X-Forwarded-Proto
    and X-Forwarded-For, and the cookies a browser keeps (Secure ones included: the browser
    saw HTTPS)."""

    def __init__(self, port: int, host: str):
        self.port = port
        self.host = host
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, *, https: bool = True, body: str | None = None,
                headers: dict[str, str] | None = None) -> tuple[http.client.HTTPResponse, bytes]:  # fmt: skip
        sent = {"Host": self.host, "X-Forwarded-For": "203.0.113.7", **(headers or {})}
        if https:
            sent["X-Forwarded-Proto"] = "https"
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            content = response.read()
        finally:
            connection.close()
        for header in response.headers.get_all("Set-Cookie") or []:
            for name, morsel in SimpleCookie(header).items():
                assert morsel["secure"], f"cookie {name} is not Secure"
                self.cookies[name] = morsel.value
        return response, content


@pytest.fixture
def gunicorn(tmp_path):
    """README's production lines, in order; the gunicorn line on a free loopback port."""
    env = production_env(tmp_path, DJANGO_SUPERUSER_PASSWORD="production-test-password")
    *preparation, serve = readme_commands()
    for words in preparation:
        assert words[:2] == ["python", "manage.py"]
        done = manage(env, *words[2:])
        assert done.returncode == 0, f"{shlex.join(words)}:\n{done.stdout}{done.stderr}"
    created = manage(
        env, "createsuperuser", "--noinput", "--username", "ops", "--email", "ops@example.com"
    )
    assert created.returncode == 0, created.stderr

    port = pick_free_port()
    bind = serve.index("--bind") + 1
    serve[bind] = f"127.0.0.1:{port}"
    log = (tmp_path / "gunicorn.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", *serve[1:]],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:

        def answers() -> bool:
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=1).connect()
                return True
            except OSError:
                return process.poll() is not None  # died: stop waiting, the test says why

        poll(answers, timeout=60, interval=0.2)
        assert process.poll() is None, (tmp_path / "gunicorn.log").read_text()
        yield Ingress(port, env["ALLOWED_HOSTS"].split(",")[0]), env
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_gunicorn_serves_a_styled_page_behind_a_tls_ingress(gunicorn):
    ingress, env = gunicorn

    # Plain HTTP is sent to HTTPS, but for Kubernetes probes.
    response, _ = ingress.request("GET", "/", https=False)
    assert response.status == 301
    assert response.headers["Location"] == f"https://{ingress.host}/"
    probe, _ = ingress.request("GET", "/healthz", https=False)
    assert probe.status in (200, 503)  # an answer (no broker here), not a redirect

    # Over HTTPS: HSTS, and the pages closed to anonymous visitors.
    response, _ = ingress.request("GET", "/history/")
    assert response.status == 302 and response.headers["Location"] == "/login/?next=/history/"
    hsts = response.headers["Strict-Transport-Security"]
    assert hsts == f"max-age={env['SECURE_HSTS_SECONDS']}; includeSubDomains; preload"

    # Log in through the form, as a browser would.
    response, content = ingress.request("GET", "/login/?next=/history/")
    assert response.status == 200
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', content).group(1).decode()
    form = f"csrfmiddlewaretoken={token}&username=ops&password=production-test-password"
    response, _ = ingress.request(
        "POST",
        "/login/",
        body=f"{form}&next=%2Fhistory%2F",
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Origin": f"https://{ingress.host}",
            "Referer": f"https://{ingress.host}/login/",
        },
    )
    assert response.status == 302 and response.headers["Location"] == "/history/"
    assert "sessionid" in ingress.cookies

    # The page, and every stylesheet and script it names, served with DEBUG off.
    response, content = ingress.request("GET", "/history/")
    assert response.status == 200, content[:2000]
    html = content.decode()
    assert "ops" in html  # logged in
    stylesheets = re.findall(r'<link rel="stylesheet" href="([^"]+)"', html)
    scripts = re.findall(r'<script[^>]* src="([^"]+)"', html)
    assert len(stylesheets) == 1 and "sluice/sluice." in stylesheets[0]
    assert any("htmx" in s for s in scripts) and any("plotly" in s for s in scripts), scripts

    expected = {
        "sluice/sluice.": ("text/css", (ROOT / "static/sluice/sluice.css").read_bytes()[:200]),
        "htmx": ("text/javascript", b"htmx"),
        "plotly": ("text/javascript", b"plotly"),
    }
    for url in stylesheets + scripts:
        assert url.startswith("/static/") and HASHED.search(url), url
        response, body = ingress.request("GET", url, headers={"Accept-Encoding": "gzip"})
        assert response.status == 200, url
        content_type, marker = next(v for k, v in expected.items() if k in url)
        assert response.headers["Content-Type"].startswith(content_type), url
        assert response.headers["Content-Encoding"] == "gzip", url
        assert "immutable" in response.headers["Cache-Control"], url
        assert marker in gzip.decompress(body), url
