"""A scheduler configuration kept in a ConfigMap (as Volcano's Helm chart installs it, under the
key ``volcano-scheduler.conf``), read through the kubernetes client and again every
``period`` seconds; ``changed()`` hands out the text only when it differs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

DEFAULT_KEY = "volcano-scheduler.conf"


class ConfigMapText:
    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        name: str,
        *,
        key: str = DEFAULT_KEY,
        period: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.core = client.CoreV1Api(api)
        self.namespace, self.name, self.key = namespace, name, key
        self.where = f"configmap {namespace}/{name} key {key}"
        self.period, self.clock = period, clock
        self._read_at = float("-inf")
        self._text: str | None = None

    def changed(self) -> str | None:
        """The new text, None when unchanged or not due; OSError when it cannot be read."""
        now = self.clock()
        if now - self._read_at < self.period:
            return None
        self._read_at = now
        try:
            response: Any = self.core.read_namespaced_config_map(
                self.name, self.namespace, _preload_content=False, _request_timeout=10
            )
        except ApiException as exc:
            self._text = None  # whatever comes back is new, even the same text
            raise OSError(f"HTTP {exc.status}: {exc.reason}") from None
        data = (json.loads(response.data).get("data") or {}).get(self.key)
        if data is None:
            self._text = None
            raise OSError(f"the ConfigMap has no key {self.key!r}")
        if data == self._text:
            return None
        self._text = data
        return data
