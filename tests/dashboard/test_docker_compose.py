"""docker-compose.yml cannot be run here (no Docker engine), so check it against the project."""

from __future__ import annotations

import importlib
import shlex
from pathlib import Path

import pytest
import yaml
from django.core.management import get_commands

ROOT = Path(__file__).resolve().parents[2]
EXPECTED_SERVICES = {
    "postgres",
    "redis",
    "web",
    "worker-scheduler",
    "worker-gates",
    "beat",
    "simcluster",
}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def command_words(service: dict) -> list[list[str]]:
    """Each shell-joined command of a service, split into words."""
    command = service["command"]
    if isinstance(command, list):
        return [command]
    words = shlex.split(command)
    if words[:2] == ["sh", "-c"]:
        return [shlex.split(part) for part in words[2].split("&&")]
    return [words]


def test_it_has_the_production_like_services(compose):
    assert set(compose["services"]) == EXPECTED_SERVICES


def test_every_project_service_builds_the_project_image_and_names_its_backends(compose):
    for name in EXPECTED_SERVICES - {"postgres", "redis"}:
        service = compose["services"][name]
        assert service["build"] == "."
        env = service["environment"]
        assert env["DATABASE_URL"].startswith("postgres://"), name
        assert env["REDIS_URL"].startswith("redis://redis:"), name
    assert (ROOT / "Dockerfile").exists()


def test_every_command_names_something_that_exists(compose):
    management_commands = get_commands()
    for name, service in compose["services"].items():
        if "command" not in service:
            continue
        for words in command_words(service):
            check_command(name, words, management_commands)


def check_command(service: str, words: list[str], management_commands: dict) -> None:
    program = words[0]
    if program == "python":
        assert words[1] == "manage.py", service
        assert words[2] in management_commands, f"{service}: no management command {words[2]}"
    elif program == "celery":
        assert words[1:3] == ["-A", "dashboard"], service
        app = importlib.import_module("dashboard.celery").app
        assert app.main == "sluice"
        if "-Q" in words:
            queues = set(words[words.index("-Q") + 1].split(","))
            assert queues <= {"scheduler", "gates", "default"}, service
    elif program == "gunicorn":
        module, attr = words[1].split(":")
        assert callable(getattr(importlib.import_module(module), attr)), service
    else:
        pytest.fail(f"{service}: unexpected program {program}")


def test_the_scheduler_worker_uses_the_solo_pool(compose):
    words = command_words(compose["services"]["worker-scheduler"])[0]
    assert words[words.index("--pool") + 1] == "solo"
    assert words[words.index("-Q") + 1] == "scheduler"
