"""Words and charts from an experiment's results (plain dicts, one per variant, as
``runner.run`` returns them and ``VariantResult`` keeps them)."""

from __future__ import annotations

from dashboard.presenters.charts import chart_html

COLOURS = ("#c62828", "#1f883d", "#0b6bcb", "#8250df", "#b35900", "#1b7c83", "#6e7781", "#bf3989")


def _hours(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") if value else "0"


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:g} s"


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def compare(base: dict, other: dict) -> str:
    """One sentence: what ``other`` would have changed against ``base``, from the numbers."""
    b, o = base["summary"], other["summary"]
    parts = []
    if o["scale_ups"] < b["scale_ups"]:
        avoided_false = b["false_scale_ups"] - o["false_scale_ups"]
        part = f"would have avoided {b['scale_ups'] - o['scale_ups']} of {b['scale_ups']} scale-ups"
        if avoided_false > 0:
            part += f" ({avoided_false} of {b['false_scale_ups']} false)"
        parts.append(part)
    elif o["scale_ups"] > b["scale_ups"]:
        parts.append(f"would have made {o['scale_ups'] - b['scale_ups']} more scale-ups "
                     f"({o['scale_ups']} against {b['scale_ups']})")  # fmt: skip
    else:
        parts.append(f"would have made as many scale-ups ({o['scale_ups']}, "
                     f"{o['false_scale_ups']} false against {b['false_scale_ups']})")  # fmt: skip
    saved = round(b["node_hours_bought"] - o["node_hours_bought"], 2)
    wasted = round(b["node_hours_wasted"] - o["node_hours_wasted"], 2)
    if saved > 0:
        if wasted > 0:  # only a saving is told as part of the saving
            parts.append(f"{_hours(saved)} node-hours ({_hours(wasted)} of them wasted)")
        else:
            parts.append(f"{_hours(saved)} node-hours")
    elif saved < 0:
        parts.append(f"bought {_hours(-saved)} node-hours more")
    if wasted < 0:  # as the table shows it: this variant wasted more
        parts.append(f"wasted {_hours(o['node_hours_wasted'])} node-hours against "
                     f"{_hours(b['node_hours_wasted'])}")  # fmt: skip
    if o["wait_p95"] != b["wait_p95"]:
        parts.append(f"pod wait p95 {_seconds(o['wait_p95'])} against {_seconds(b['wait_p95'])}")
    if o["never_ran"] != b["never_ran"]:
        parts.append(f"{_count(o['never_ran'], 'pod')} never ran against {b['never_ran']}")
    if o["evictions"] != b["evictions"]:
        parts.append(f"{_count(o['evictions'], 'eviction')} against {b['evictions']}")
    return f"{other['name']} " + ", ".join(parts)


def verdict(results: list[dict]) -> str:
    """The experiment in one paragraph: each variant against the first."""
    if not results:
        return "No result yet."
    base = results[0]
    s = base["summary"]
    opening = (
        f"{base['name']} made {_count(s['scale_ups'], 'scale-up')} "
        f"({s['false_scale_ups']} false), bought {_hours(s['node_hours_bought'])} node-hours "
        f"({_hours(s['node_hours_wasted'])} wasted); pods waited p50 {_seconds(s['wait_p50'])}, "
        f"p95 {_seconds(s['wait_p95'])}; {s['never_ran']} of {s['pods']} never ran."
    )
    sentences = [opening] + [compare(base, other) + "." for other in results[1:]]
    broken = [r["name"] for r in results
              if r.get("variant", {}).get("gates") and r["summary"]["false_scale_ups"]]  # fmt: skip
    if broken:
        sentences.append(
            f"With gates on, {', '.join(broken)} still made false scale-ups: gated pods "
            "should never trigger one; look at the scale-ups' pods."
        )
    return " ".join(sentences)


def _figure(traces: list[dict], title: str, x_title: str, y_title: str, **layout) -> dict:
    return {
        "data": traces,
        "layout": {
            "title": {"text": title},
            "xaxis": {"title": {"text": x_title}},
            "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
            "height": 340,
            "margin": {"l": 55, "r": 20, "t": 40, "b": 45},
            "legend": {"orientation": "h", "y": -0.25},
            "template": {"layout": {"plot_bgcolor": "white", "paper_bgcolor": "white"}},
            **layout,
        },
    }


def nodes_figure(results: list[dict]) -> dict:
    traces = [
        {
            "type": "scatter",
            "mode": "lines",
            "line": {"shape": "hv", "color": COLOURS[i % len(COLOURS)]},
            "name": r["name"],
            "x": [round(s["t"] / 60, 3) for s in r["samples"]],
            "y": [s["nodes"] for s in r["samples"]],
        }
        for i, r in enumerate(results)
    ]
    return _figure(traces, "Nodes over time", "minutes", "nodes")


def waits_figure(results: list[dict]) -> dict:
    traces = [
        {
            "type": "box",
            "name": r["name"],
            "y": [p["wait"] for p in r["pods"] if p["wait"] is not None],
            "boxpoints": "outliers",
            "marker": {"color": COLOURS[i % len(COLOURS)]},
        }
        for i, r in enumerate(results)
    ]
    return _figure(traces, "Pod wait, creation to bind (pods that ran)", "variant", "seconds",
                   showlegend=False)  # fmt: skip


def utilisation_figure(results: list[dict]) -> dict:
    """Each queue's allocated CPU over its real capability, per variant (queues without a
    capability left out)."""
    traces = []
    dashes = ("solid", "dot", "dash", "dashdot", "longdash")
    for i, r in enumerate(results):
        queues = sorted({q for s in r["samples"] for q, v in s["queues"].items()
                         if v.get("capability")})  # fmt: skip
        for j, queue in enumerate(queues):
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": f"{r['name']}: {queue}",
                    "legendgroup": r["name"],
                    "line": {"color": COLOURS[i % len(COLOURS)], "dash": dashes[j % len(dashes)]},
                    "x": [round(s["t"] / 60, 3) for s in r["samples"]],
                    "y": [
                        round(100 * s["queues"][queue]["allocated"]
                              / s["queues"][queue]["capability"], 2)
                        if queue in s["queues"] and s["queues"][queue].get("capability")
                        else None
                        for s in r["samples"]
                    ],
                }
            )  # fmt: skip
    return _figure(traces, "Queue CPU utilisation (allocated / capability)", "minutes", "%")


def charts(results: list[dict]) -> dict[str, str]:
    return {
        "nodes": chart_html(nodes_figure(results), "whatif-nodes"),
        "waits": chart_html(waits_figure(results), "whatif-waits"),
        "utilisation": chart_html(utilisation_figure(results), "whatif-utilisation"),
    }


SUMMARY_ROWS = (
    ("scale_ups", "scale-ups", "scale-up"),
    ("false_scale_ups", "false scale-ups", "false-scale-up"),
    ("node_hours_bought", "node-hours bought", "scale-up"),
    ("node_hours_wasted", "node-hours wasted", "scale-up"),
    ("wait_p50", "wait p50 (s)", "ran"),
    ("wait_p95", "wait p95 (s)", "ran"),
    ("wait_max", "wait max (s)", "ran"),
    ("evictions", "evictions", "evicted"),
    ("never_ran", "pods that never ran", "never-ran"),
    ("pods", "pods", ""),
)


def summary_rows(results: list[dict]) -> list[dict]:
    """Rows of the side-by-side table: label, then per variant its value and the pod filter
    that lists the pods behind it."""
    return [
        {
            "label": label,
            "cells": [
                {"value": r["summary"].get(key), "filter": flt, "position": i}
                for i, r in enumerate(results)
            ],
        }  # fmt: skip
        for key, label, flt in SUMMARY_ROWS
    ]


def queue_rows(results: list[dict]) -> list[dict]:
    queues = sorted({q for r in results for q, v in r["by_queue"].items() if v["pods"]})
    return [
        {
            "queue": queue,
            "cells": [
                {"position": i, **(r["by_queue"].get(queue) or {})} for i, r in enumerate(results)
            ],  # fmt: skip
        }
        for queue in queues
    ]


POD_FILTERS = {
    "": "all pods",
    "ran": "pods that ran",
    "never-ran": "pods that never ran",
    "evicted": "pods evicted",
    "scale-up": "pods that triggered a scale-up",
    "false-scale-up": "pods that triggered a false scale-up",
}


def pods_for(result: dict, flt: str, queue: str = "") -> list[dict]:
    pods = result["pods"]
    if queue:
        pods = [p for p in pods if p["queue"] == queue]
    if flt == "ran":
        return sorted((p for p in pods if p["bound"] is not None), key=lambda p: -p["wait"])
    if flt == "never-ran":
        return [p for p in pods if p["bound"] is None]
    if flt == "evicted":
        return [p for p in pods if p["evicted"]]
    if flt in ("scale-up", "false-scale-up"):
        wanted = {
            (tp["namespace"], tp["name"])
            for s in result["scale_ups"]
            if flt == "scale-up" or s["false_scale_up"]
            for tp in s["pods"]
        }
        return [p for p in pods if (p["namespace"], p["name"]) in wanted]
    return pods
