"""The TLS front and certificates of test_transport, for the bind process's tests too."""

from __future__ import annotations

from tests.scheduler.kube.test_transport import (  # noqa: F401 - fixtures
    cluster_ca,
    plain_front,
    scheduler_identity,
    tls_front,
)
