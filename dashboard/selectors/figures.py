"""Engine units made readable, and the capacity bar's segments.

Resources in reports are engine units: CPU in millicores, memory and storage in bytes, every
other dimension (pods, GPUs) as a plain count.
"""

from __future__ import annotations

BAR_RESOURCES = ("cpu", "memory", "nvidia.com/gpu")
SEGMENTS = ("allocated", "reserved", "inqueue")


def format_amount(resource: str, value: float) -> str:
    if resource == "cpu":
        cores = value / 1000
        return f"{cores:g} CPU" if cores == int(cores) else f"{cores:.1f} CPU"
    if resource in {"memory", "ephemeral-storage"}:
        gib = value / 1024**3
        return f"{gib:g}Gi" if gib == int(gib) else f"{gib:.1f}Gi"
    return f"{value:g} {resource}"


def format_resources(resources: dict | None) -> str:
    """``{"cpu": 4000, "memory": ...}`` -> ``4 CPU, 16Gi``; "none" when empty or all zero."""
    parts = [format_amount(r, v) for r, v in (resources or {}).items() if v and r != "pods"]
    return ", ".join(parts) or "none"


def capacity_bars(queue: dict) -> list[dict]:
    """One bar per resource the queue uses or limits: allocated | reserved | inqueue | free,
    drawn against the largest of capability, deserved and use, with deserved as a marker.

    The inqueue segment is what admitted jobs still want beyond their pods' gate
    reservations: a job whose ungated pods wait for a node counts in both of the engine's
    figures (``inqueue_reserved`` says how much), and drawing both would count it twice."""
    bars = []
    for resource in BAR_RESOURCES:
        amounts = {s: (queue.get(s) or {}).get(resource, 0) for s in SEGMENTS}
        held = (queue.get("inqueue_reserved") or {}).get(resource, 0)
        amounts["inqueue"] = max(amounts["inqueue"] - held, 0)
        capability = (queue.get("capability") or {}).get(resource)
        deserved = (queue.get("deserved") or {}).get(resource)
        used = sum(amounts.values())
        if not (used or capability or deserved):
            continue
        scale = max(capability or 0, deserved or 0, used) or 1
        free = max((capability or scale) - used, 0)
        segments = [(kind, v) for kind, v in [*amounts.items(), ("free", free)] if v]
        limits = f"capability {format_amount(resource, capability) if capability else 'unlimited'}"
        if deserved:
            limits += f", deserved {format_amount(resource, deserved)}"
        # Widths and texts are finished here: formatting in the template cost the overview
        # most of its time with 100 queues.
        bars.append(
            {
                "resource": resource,
                "segments": [
                    {
                        "kind": kind,
                        "width": f"{100 * v / scale:.2f}%",
                        "title": f"{kind} {format_amount(resource, v)}",
                    }
                    for kind, v in segments
                ],  # fmt: skip
                "summary": " · ".join(f"{k} {format_amount(resource, v)}" for k, v in segments)
                + f" / {limits}",
                "deserved_left": f"{100 * deserved / scale:.2f}%" if deserved else "",
            }
        )
    return bars
