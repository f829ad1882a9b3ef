"""Local run-time files under ``.run/``: generated secrets and the embedded Redis socket.

Only development uses these; production passes everything through the environment.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
RUN_DIR = Path(os.environ.get("SLUICE_RUN_DIR", BASE_DIR / ".run"))


def generated_secret(name: str, *, length: int = 50) -> str:
    """Read ``.run/<name>``, creating it with a fresh random value (mode 0600) when missing."""
    path = RUN_DIR / name
    if path.exists():
        return path.read_text().strip()
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(length)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(value + "\n")
    return value
