"""Engine units made readable.

Resources in reports are engine units: CPU in millicores, memory and storage in bytes, every
other dimension (pods, GPUs) as a plain count.
"""

from __future__ import annotations

from collections.abc import Mapping


def format_amount(resource: str, value: float) -> str:
    if resource == "cpu":
        cores = value / 1000
        return f"{cores:g} CPU" if cores == int(cores) else f"{cores:.1f} CPU"
    if resource in {"memory", "ephemeral-storage"}:
        gib = value / 1024**3
        return f"{gib:g}Gi" if gib == int(gib) else f"{gib:.1f}Gi"
    return f"{value:g} {resource}"


def format_resources(resources: Mapping[str, float] | None) -> str:
    """``{"cpu": 4000, "memory": ...}`` -> ``4 CPU, 16Gi``; "none" when empty or all zero."""
    parts = [format_amount(r, v) for r, v in (resources or {}).items() if v and r != "pods"]
    return ", ".join(parts) or "none"
