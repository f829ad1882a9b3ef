"""The simulated cluster's API for the engine's tests that talk to a cluster (kube/,
test_service), with a short watch log (50 events) so an informer can be made to miss events and
relist."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import wait_until  # noqa: F401 - re-exported for tests
from tests.simcluster.api.conftest import Sim, kubectl, kubectl_binary, start_sim  # noqa: F401 - fixtures


@pytest.fixture
def sim() -> Iterator[Sim]:
    running = start_sim(watch_log_size=50)
    yield running
    running.api_client.close()
    running.server.stop()
