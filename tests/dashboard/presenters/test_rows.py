"""Tables built row by row in Python (History's cycles, the Autoscaler's events) write what the
templates wrote: each is compared with the template engine's rendering of the markup it
replaced, for values that exercise every branch, odd numbers and dates, and hostile text."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest
from django.template import Context, Template
from django.utils import timezone

from dashboard.models import Cycle
from dashboard.presenters.autoscaler import event_rows
from dashboard.presenters.cycles import cycle_rows
from dashboard.presenters.markup import date_time, one_decimal, text
from dashboard.presenters.transitions import history_lines
from dashboard.selectors.cycles import CycleTransitions, ShownTransition

# The markup templates/dashboard/history.html wrote for its rows before cycle_rows.
CYCLES_TEMPLATE = """{% for cycle, transitions, lines in cycles %}
          <tr><td>{{ cycle.started_at|date:"Y-m-d H:i:s" }}</td><td>{{ cycle.duration_ms|floatformat:1 }} ms</td><td>{{ cycle.mode }}</td>
            <td>{% if transitions %}<details><summary>{{ cycle.decisions }}</summary><ul>{% for line in lines %}<li>{{ line }}</li>{% endfor %}{% if transitions.more %}<li>… and {{ transitions.more }} more in this cycle (each pod's page has its own)</li>{% endif %}</ul></details>{% else %}0{% endif %}
              {% if cycle.error %}<p class="error">{% if cycle.failed %}<strong>Cycle failed:</strong> {% endif %}{{ cycle.error }}</p>{% endif %}</td></tr>
        {% endfor %}"""  # noqa: E501

# The markup templates/dashboard/autoscaler.html wrote for its events before event_rows.
EVENTS_TEMPLATE = """{% for e in events %}<tr class="event-{{ e.reason|lower }}"><td>{{ e.at|date:"Y-m-d H:i:s" }}</td><td>{{ e.reason }}</td><td>{{ e.kind }} {% if e.namespace %}{{ e.namespace }}/{% endif %}{{ e.name }}</td><td>{{ e.message }}</td></tr>{% endfor %}"""  # noqa: E501

HOSTILE = "<script>alert('x')</script> & \"quoted\""
AT = datetime(2026, 11, 24, 6, 5, 41, 390606, tzinfo=UTC)


def _template(source: str, **context) -> str:
    return Template(source).render(Context(context))


DURATIONS = [0.0, 0.04, 0.05, 0.15, 0.25, 2.675, 12.25, 12.35, 999.95, 1234.5678, 1e14 + 0.05,
             1e15, 3.5e17, 7, -0.04, -0.05, -12.25, math.inf, -math.inf, math.nan]  # fmt: skip


@pytest.mark.parametrize("value", DURATIONS)
def test_one_decimal_is_floatformat_1(value):
    assert one_decimal(value) == _template("{{ v|floatformat:1 }}", v=value)


def test_one_decimal_is_floatformat_1_for_random_durations():
    rng = random.Random(7)
    values = [round(rng.uniform(0, 5000), rng.randint(0, 6)) for _ in range(3000)]
    values += [rng.uniform(0, 1e6) for _ in range(2000)]
    template = Template("{% for v in values %}{{ v|floatformat:1 }}|{% endfor %}")
    assert "".join(f"{one_decimal(v)}|" for v in values) == template.render(
        Context({"values": values})
    )


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/St_Johns"])
@pytest.mark.parametrize(
    "at",
    [AT, AT.replace(microsecond=0), datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC),
     AT.astimezone(timezone.get_fixed_timezone(-150)), datetime(2026, 3, 29, 1, 30), None],
)  # fmt: skip
def test_date_time_is_the_date_filter_in_the_current_time_zone(at, zone):
    with timezone.override(zone):
        assert date_time(at) == _template('{{ at|date:"Y-m-d H:i:s" }}', at=at)


@pytest.mark.parametrize("value", [HOSTILE, "", 0, None, "plain", "é → ü"])
def test_text_is_what_a_variable_writes(value):
    assert text(value) == _template("{{ v }}", v=value)


def _shown(name: str, **kw) -> ShownTransition:
    fields = {"namespace": "batch", "name": name, "kind": "allocated", "from_state": "waiting",
              "to_state": "binding", "node": "n1", "message": "allocated"}  # fmt: skip
    return ShownTransition(**{**fields, **kw})


def test_cycle_rows_are_the_templates_rows():
    shown = [_shown("a"), _shown("b b%c", node="", message=""),
             _shown("x", kind="bind_failed", node=HOSTILE, message=HOSTILE, from_state="")]  # fmt: skip
    cycles = [
        Cycle(id=1, started_at=AT, duration_ms=12.25, mode="act", decisions=3),
        Cycle(id=2, started_at=AT + timedelta(seconds=1), duration_ms=0.05, mode="observe",
              decisions=0, error="bind refused: <b>409</b>"),
        Cycle(id=3, started_at=AT + timedelta(seconds=2), duration_ms=999.95, mode=HOSTILE,
              decisions=30, error=HOSTILE, failed=True),
        Cycle(id=4, started_at=AT + timedelta(seconds=3), duration_ms=7.0, mode="act",
              decisions=2, failed=True, error="x"),
    ]  # fmt: skip
    transitions = {
        1: CycleTransitions(shown, 3),
        3: CycleTransitions(shown[:2], 30),  # 28 more
        4: CycleTransitions([], 0),  # a cycle with a transitions entry but none shown
    }
    old = _template(
        CYCLES_TEMPLATE,
        cycles=[
            (c, transitions.get(c.id), history_lines(transitions[c.id].shown) if c.id in
             transitions else [])
            for c in cycles
        ],
    )  # fmt: skip
    assert cycle_rows(cycles, transitions) == old
    assert "… and 28 more in this cycle" in old and "<script>" not in old  # every branch ran


def test_event_rows_are_the_templates_rows():
    events = [
        {"at": AT, "reason": "TriggeredScaleUp", "kind": "Pod", "namespace": "batch",
         "name": "p-0", "message": "pod triggered scale-up: [{g 1->2 (max: 3)}]"},
        {"at": None, "reason": "ScaleDown", "kind": "Node", "namespace": "", "name": "n1",
         "message": ""},
        {"at": AT, "reason": "NotTriggerScaleUp", "kind": None, "namespace": HOSTILE,
         "name": None, "message": HOSTILE},
        {"at": AT.astimezone(timezone.get_fixed_timezone(330)), "reason": "Odd<Reason>",
         "kind": HOSTILE, "namespace": "ns", "name": HOSTILE, "message": "é"},
    ]  # fmt: skip
    for zone in ("UTC", "Asia/Kolkata"):
        with timezone.override(zone):
            old = _template(EVENTS_TEMPLATE, events=events)
            assert event_rows(events) == old
    assert "<script>" not in old and "None" in old  # a missing kind and name, as before
