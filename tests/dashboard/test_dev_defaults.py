"""README's commands run as written from the activated virtualenv: no SECRET_KEY, DEBUG or make
needed outside production (SLUICE_ENV=production), where a missing SECRET_KEY is an error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.core import checks
from django.test import override_settings

from tests.scheduler.conftest import sim  # noqa: F401 - the simulated cluster fixture
from tests.scheduler.test_service import create_cluster

ROOT = Path(__file__).resolve().parents[2]
# What make, the test command or a developer's shell may have set.
UNSET = ("SECRET_KEY", "SLUICE_DEV_SECRET", "DEBUG", "SLUICE_ENV", "DJANGO_SETTINGS_MODULE")


def shell(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An activated virtualenv's environment: its bin first on PATH, nothing of Sluice set."""
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["SLUICE_RUN_DIR"] = str(tmp_path / "run")
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    return {**env, **extra}


def python_manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["python", "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_schedule_help_and_once_need_no_secret_key(sim, tmp_path):  # noqa: F811
    env = shell(tmp_path)
    helped = python_manage(env, "schedule", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "--once" in helped.stdout

    create_cluster(sim, pods=2)
    kubeconfig = sim.server.write_kubeconfig(tmp_path / "kubeconfig")
    once = python_manage(env, "schedule", "--kubeconfig", str(kubeconfig), "--once")
    assert once.returncode == 0, once.stderr
    assert once.stdout.startswith("cycle observe:"), once.stdout
    # The development key, generated once and kept private.
    key = tmp_path / "run" / "secret_key"
    assert key.stat().st_mode & 0o777 == 0o600
    again = python_manage(env, "shell", "-c", "from django.conf import settings; "
                          "print(settings.SECRET_KEY)")  # fmt: skip
    assert again.stdout.strip().splitlines()[-1] == key.read_text().strip()


def test_production_without_a_secret_key_is_an_error(tmp_path):
    result = python_manage(shell(tmp_path, SLUICE_ENV="production"), "schedule", "--help")
    assert result.returncode != 0
    assert "SECRET_KEY must be set in production (SLUICE_ENV=production)" in result.stderr
    assert not (tmp_path / "run" / "secret_key").exists()
    given = python_manage(
        shell(tmp_path, SLUICE_ENV="production", SECRET_KEY="x" * 50), "schedule", "--help"
    )
    assert given.returncode == 0, given.stderr


def test_an_unknown_environment_is_an_error(tmp_path):
    result = python_manage(shell(tmp_path, SLUICE_ENV="prod"), "check")
    assert result.returncode != 0
    assert "SLUICE_ENV='prod': expected development or production" in result.stderr


def test_check_deploy_warns_while_the_generated_key_is_in_use():
    def ids() -> set[str]:
        return {m.id for m in checks.run_checks(include_deployment_checks=True)}

    with override_settings(SLUICE_GENERATED_SECRET_KEY=True):
        assert "sluice.W002" in ids()
    with override_settings(SLUICE_GENERATED_SECRET_KEY=False):
        assert "sluice.W002" not in ids()
