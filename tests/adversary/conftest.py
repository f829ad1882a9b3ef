"""Fixtures for the adversary's tests: the simulated cluster's API on a loopback port, a
kubeconfig for it, and kubectl — reused from the simulated cluster's own test fixtures."""

from __future__ import annotations

from tests.simcluster.api.conftest import kubectl, kubectl_binary, sim  # noqa: F401 - fixtures
