"""Fixtures for the admission-check flows."""

from __future__ import annotations

import pytest

from tests.e2e.admission.flow import start


@pytest.fixture
def harnesses():
    """``make(scenario, ...)`` starts a Harness with the check (flow.start); all are closed
    after the test."""
    started = []

    def make(*args, **kwargs):
        h = start(*args, **kwargs)
        started.append(h)
        return h

    yield make
    for h in started:
        h.close()
