"""Plotly figures built server-side from selector rows; no Django needed to test them.

Figures are plain dicts in Plotly's figure schema, rendered by ``plotly.io`` without
validation: building ``graph_objects`` validates and deep-copies every point, which cost
~80 ms per chart and broke the pages' 50 ms budget. Templates embed ``chart_html(fig)``
(plotly.js comes from our static files, never a CDN) next to ``series_summary`` for browsers
without JavaScript.
"""

from __future__ import annotations

import plotly.io as pio

from scheduler.api.report import PodState

STATE_COLOURS = {
    PodState.RUNNING: "#1f883d",
    PodState.GATED: "#8250df",
    PodState.WAITING: "#b35900",
    PodState.PIPELINED: "#0b6bcb",
    PodState.UNSCHEDULABLE: "#c62828",
}
CPU_FIELDS = ("allocated", "reserved", "deserved", "capability")
DASHES = {"deserved": "dash", "capability": "dot"}


def _figure(traces: list[dict], title: str, y_title: str, **layout) -> dict:
    return {
        "data": traces,
        "layout": {
            "title": {"text": title},
            "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
            "height": 320,
            "margin": {"l": 50, "r": 20, "t": 40, "b": 40},
            "legend": {"orientation": "h", "y": -0.2},
            "template": {"layout": {"plot_bgcolor": "white", "paper_bgcolor": "white"}},
            **layout,
        },
    }


def _line(x: list, y: list, name: str, **line) -> dict:
    return {"type": "scatter", "mode": "lines", "x": x, "y": y, "name": name, "line": line}


def queue_cpu_figure(samples: list[dict]) -> dict:
    """Allocated and reserved CPU against deserved and capability, in cores."""
    at = [s["at"].isoformat() for s in samples]
    traces = [
        _line(at, cpu_series(samples, field), field, dash=DASHES.get(field, "solid"))
        for field in CPU_FIELDS
    ]
    return _figure(traces, "CPU", "cores")


def cpu_series(samples: list[dict], field: str) -> list[float]:
    return [(s[field] or {}).get("cpu", 0) / 1000 for s in samples]


def pod_counts_figure(rows: list[dict], *, time_key: str = "at") -> dict:
    """Pods by state over time; rows hold the counts (by state value) directly or under
    ``counts``."""
    at = [r[time_key].isoformat() for r in rows]
    traces = []
    for state, colour in STATE_COLOURS.items():
        values = [(r.get("counts") or r).get(state.value) for r in rows]
        if any(v is not None for v in values):
            traces.append(_line(at, values, state.value, color=colour))
    return _figure(traces, "Pods by state", "pods")


def cycle_duration_figure(rows: list[dict]) -> dict:
    at = [r["started_at"].isoformat() for r in rows]
    return _figure([_line(at, [r["duration_ms"] for r in rows], "cycle")], "Cycle duration", "ms")


def action_durations_figure(cycles: list) -> dict:
    """Stacked duration of each action over recent cycles, oldest first."""
    ordered = sorted(cycles, key=lambda c: c.started_at)
    at = [c.started_at.isoformat() for c in ordered]
    actions = sorted({a for c in ordered for a in c.action_durations_ms})
    traces = [
        {"type": "bar", "x": at, "name": action,
         "y": [c.action_durations_ms.get(action, 0) for c in ordered]}
        for action in actions
    ]  # fmt: skip
    return _figure(traces, "Duration per action", "ms", barmode="stack")


def series_summary(columns: dict[str, list[float | int | None]]) -> list[dict]:
    """Latest, lowest and highest of each named series: the charts' no-JavaScript fallback."""
    rows = []
    for name, values in columns.items():
        present = [v for v in values if v is not None]
        if present:
            rows.append({"name": name, "latest": present[-1], "low": min(present),
                         "high": max(present)})  # fmt: skip
    return rows


def chart_html(fig: dict, div_id: str) -> str:
    return pio.to_html(
        fig,
        full_html=False,
        include_plotlyjs=False,
        div_id=div_id,
        validate=False,
        config={"displaylogo": False, "responsive": True},
    )
