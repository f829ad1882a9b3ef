"""Seeded faults in the simulated cluster, off by default.

Real clusters fail in ways a test scenario rarely thinks of: kube-apiserver answers a write
409 Conflict (an optimistic-concurrency clash), 429 Too Many Requests (API Priority and
Fairness, or an eviction a PodDisruptionBudget refuses) or 500 (etcd trouble), or answers
slowly; a watch stream ends and its resume is answered 410 Gone ("too old resource version",
the informer must relist); nodes turn NotReady, are tainted or go away; users delete pods while
a scheduler is deciding about them; an admission webhook times out. ``Faults`` injects each
kind, at the fraction ``FaultConfig`` gives, and counts what it injected.

Two hooks use it:

- the API server (``simcluster.api.requests.dispatch``) asks ``Faults.serve`` to answer a
  request: a write may be refused before it is applied, slowed, or its pod deleted first (the
  pod deleted mid-cycle, between the scheduler's decision and its write); a watch may be cut or
  its resume answered 410;
- whoever advances the simulation calls ``Faults.tick(store, now)``: nodes NotReady, tainted or
  deleted, PodDisruptionBudgets created on chosen running pods.

Decisions are seeded: a request's fate depends on the seed, its method and path and how many
times that method and path were asked before (not on how threads interleave across objects);
the cluster-level faults on the seed and the step.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from simcluster.api.errors import ApiError, status_object
from simcluster.podutil import is_finished, meta
from simcluster.store import NotFound, Store

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# The taint a fault puts on a node (not one the scheduler tolerates by default).
FAULT_TAINT = {"key": "sim.sluice.io/fault", "value": "tainted", "effect": "NoSchedule"}
NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
PDB_LABEL = "sim.sluice.io/pdb"

if TYPE_CHECKING:
    from simcluster.api.cluster import Cluster


@dataclass(frozen=True)
class FaultConfig:
    """Fractions in [0, 1]. Per request: ``conflict``/``throttle``/``serverError``/``slow`` of
    writes, ``podDelete`` of writes to a pod (binding, status, eviction), ``watchGone`` of
    watch resumes, ``watchCut`` per watch event, ``webhookTimeout`` of webhook calls. Per
    simulation step: ``nodeNotReady``/``nodeTaint``/``nodeDelete`` (one node), ``pdb`` (a
    budget that allows no disruption, created on one running pod)."""

    seed: int = 0
    conflict: float = 0.0
    throttle: float = 0.0
    server_error: float = 0.0
    slow: float = 0.0
    slow_seconds: float = 0.01  # wall seconds: slows the writer, never the virtual clock
    pod_delete: float = 0.0
    watch_cut: float = 0.0
    watch_gone: float = 0.0
    webhook_timeout: float = 0.0
    node_not_ready: float = 0.0
    node_taint: float = 0.0
    node_delete: float = 0.0
    pdb: float = 0.0

    @property
    def enabled(self) -> bool:
        return any(
            getattr(self, f.name) > 0
            for f in fields(self)
            if f.name not in ("seed", "slow_seconds")
        )

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "faults") -> FaultConfig:
        """From a scenario's ``faults:`` section (camelCase keys, as the rest of the file)."""
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a map")
        known = {_camel(f.name): f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                raise ValueError(f"{where}: unknown key {key!r} (known: {', '.join(known)})")
            name = known[key]
            if name == "seed":
                if not isinstance(value, int) or isinstance(value, bool):
                    raise ValueError(f"{where}.seed: expected an integer, got {value!r}")
                values[name] = value
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{where}.{key}: expected a number, got {value!r}")
            limit = float("inf") if name == "slow_seconds" else 1.0
            if not 0 <= value <= limit:
                raise ValueError(f"{where}.{key}: expected a fraction in [0, 1], got {value!r}")
            values[name] = float(value)
        return cls(**values)

    @classmethod
    def from_text(cls, text: str, *, seed: int | None = None) -> FaultConfig:
        """From a command line: ``all``, ``all=0.02`` (every kind at that fraction) or
        ``conflict=0.05,watchGone=0.5,…``; ``seed`` overrides a ``seed=`` given there."""
        data: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, _, value = part.partition("=")
            if key == "all":
                data.update(
                    ALL_KINDS if not value else dict.fromkeys(ALL_KINDS, _number(key, value))
                )
                continue
            if not value:
                raise ValueError(f"--faults: {part!r}: expected key=value")
            data[key] = _number(key, value)
        if seed is not None:
            data["seed"] = seed
        return cls.from_dict(data, where="--faults")

    def to_dict(self) -> dict:
        return {_camel(k): v for k, v in asdict(self).items()}


def _number(key: str, value: str) -> int | float:
    """A ``--faults`` value as a number, or a ValueError naming the flag and the key (Python's
    own "could not convert string to float: 'abc'" names neither)."""
    integer = key == "seed"
    try:
        return int(value) if integer else float(value)
    except ValueError:
        wanted = "an integer" if integer else "a number"
        raise ValueError(f"--faults.{key}: expected {wanted}, got {value!r}") from None


# Every fault kind, at rates a run of a few hundred cycles meets each of several times while
# the scheduler still gets work done (``--faults all``).
ALL_KINDS: dict[str, float] = {
    "conflict": 0.03,
    "throttle": 0.03,
    "serverError": 0.03,
    "slow": 0.03,
    "podDelete": 0.01,
    "watchCut": 0.01,
    "watchGone": 0.5,
    "webhookTimeout": 0.05,
    "nodeNotReady": 0.01,
    "nodeTaint": 0.01,
    "nodeDelete": 0.005,
    "pdb": 0.02,
}

KINDS = (
    "conflict",
    "throttle",
    "server_error",
    "slow",
    "pod_delete",
    "watch_cut",
    "watch_gone",
    "webhook_timeout",
    "node_not_ready",
    "node_taint",
    "node_delete",
    "pdb",
)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)


class Faults:
    """Injects the faults of ``config``; ``counts`` says how many of each kind so far."""

    def __init__(self, config: FaultConfig, cluster: Cluster | None = None) -> None:
        self.config = config
        self.cluster = cluster  # needed for podDelete and budgets
        self.counts: Counter[str] = Counter()
        self.log: list[str] = []  # one line per injected fault, in order (the last 1000)
        self._asked: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._step = 0

    # -- decisions ---------------------------------------------------------------------------

    def _draw(self, kind: str, key: str) -> float:
        """A number in [0, 1) fixed by the seed, the kind, the key and how often it was asked."""
        with self._lock:
            n = self._asked[f"{kind}|{key}"]
            self._asked[f"{kind}|{key}"] += 1
        digest = hashlib.blake2b(f"{self.config.seed}|{kind}|{key}|{n}".encode(), digest_size=8)
        return int.from_bytes(digest.digest(), "big") / 2**64

    def _hit(self, kind: str, key: str) -> bool:
        rate = getattr(self.config, kind)
        return rate > 0 and self._draw(kind, key) < rate

    def record(self, kind: str, detail: str) -> None:
        with self._lock:
            self.counts[kind] += 1
            self.log.append(f"{kind}: {detail}")
            del self.log[:-1000]

    def summary(self) -> dict[str, int]:
        """Every kind with its count (zeros included), for the simulation's output."""
        with self._lock:
            return {_camel(kind): self.counts[kind] for kind in KINDS}

    # -- the API server's hook ----------------------------------------------------------------

    def serve(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        answer: Callable[[], tuple[int, Any]],
        body: bytes = b"",
    ) -> tuple[int, Any]:
        """Answer one request, perhaps with a fault; ``answer()`` serves it for real. A PATCH's
        fate also depends on what it changes (``_patch_shape``): two writers patching the same
        pod at once (its reservation stamp, its gate removal) each meet the faults of their own
        patch whichever lands first."""
        key = f"{method} {path}"
        is_watch = method == "GET" and (
            (query.get("watch") or "").lower() in ("true", "1") or "/watch/" in path
        )
        if is_watch:
            version = query.get("resourceVersion", "")
            if version not in ("", "0") and self._hit("watch_gone", path):
                self.record("watch_gone", f"{path} from resourceVersion {version}")
                message = f"too old resource version: {version} (injected fault)"
                error = {"type": "ERROR", "object": status_object(410, message, "Expired")}
                return 200, _events([error])
            code, payload = answer()
            if self.config.watch_cut > 0 and not isinstance(payload, dict):
                return code, self._cut(path, payload)
            return code, payload
        if method not in WRITE_METHODS:
            return answer()
        draw = f"{key} {_patch_shape(body)}" if method == "PATCH" else key
        self._refuse(key, draw)
        if self._hit("slow", draw):
            self.record("slow", key)
            time.sleep(self.config.slow_seconds)
        self._delete_pod_first(path, key, draw)
        return answer()

    def _refuse(self, key: str, draw: str | None = None) -> None:
        """Refuse the write ``key`` (method and path) perhaps; ``draw`` keys its draws."""
        key_drawn = draw or key
        if self._hit("conflict", key_drawn):
            self.record("conflict", key)
            raise ApiError(
                409,
                "Operation cannot be fulfilled: the object has been modified; please apply "
                "your changes to the latest version and try again (injected fault)",
                reason="Conflict",
            )
        if self._hit("throttle", key_drawn):
            self.record("throttle", key)
            raise ApiError(
                429, "Too many requests, please try again later (injected fault)",
                reason="TooManyRequests",
            )  # fmt: skip
        if self._hit("server_error", key_drawn):
            self.record("server_error", key)
            raise ApiError(
                500, "Internal error occurred: etcdserver: request timed out (injected fault)",
                reason="InternalError",
            )  # fmt: skip

    def _delete_pod_first(self, path: str, key: str, draw: str | None = None) -> None:
        """A write to a pod (its binding, status or eviction): its owner deletes it just before."""
        parts = [p for p in path.split("/") if p]
        if self.cluster is None or len(parts) < 6 or parts[:3] != ["api", "v1", "namespaces"]:
            return
        if parts[4] != "pods" or not self._hit("pod_delete", draw or key):
            return
        with contextlib.suppress(NotFound):
            self.cluster.store.delete("pods", parts[3], parts[5])
            self.record("pod_delete", f"{parts[3]}/{parts[5]} before {key}")

    def _cut(self, path: str, events: Iterator[dict | None]) -> Iterator[dict | None]:
        try:
            for event in events:
                yield event
                if event is None:  # simcluster.api.watch.CAUGHT_UP: no event, nothing to cut
                    continue
                version = (event.get("object") or {}).get("metadata", {}).get("resourceVersion")
                if self._hit("watch_cut", f"{path}@{version}"):
                    self.record("watch_cut", f"{path} after resourceVersion {version}")
                    return
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()

    def webhook_times_out(self, namespace: str, name: str) -> bool:
        """Whether this call of the admission webhook times out (the webhook's hook)."""
        if self._hit("webhook_timeout", f"{namespace}/{name}"):
            self.record("webhook_timeout", f"pod {namespace}/{name}")
            return True
        return False

    # -- the simulation's hook ----------------------------------------------------------------

    def tick(self, store: Store, now: float) -> None:
        """One simulation step's cluster-level faults."""
        self._step += 1
        step = str(self._step)
        nodes = sorted(store.list("nodes")[0], key=lambda n: meta(n)["name"])
        if nodes and self._hit("node_not_ready", step):
            node = nodes[int(self._draw("pick", step) * len(nodes))]
            self._mutate_node(store, node, _not_ready, now)
            self.record("node_not_ready", meta(node)["name"])
        if nodes and self._hit("node_taint", step):
            node = nodes[int(self._draw("pick", step) * len(nodes))]
            self._mutate_node(store, node, _tainted, now)
            self.record("node_taint", meta(node)["name"])
        if len(nodes) > 1 and self._hit("node_delete", step):
            node = nodes[int(self._draw("pick", step) * len(nodes))]
            with contextlib.suppress(NotFound):
                store.delete("nodes", "", meta(node)["name"])
                self.record("node_delete", meta(node)["name"])
        if self._hit("pdb", step):
            self._budget(store, step)

    def _mutate_node(self, store: Store, node: dict, change: Callable[[dict], None], now: float):
        with contextlib.suppress(NotFound):
            store.mutate("nodes", "", meta(node)["name"], change)

    def _budget(self, store: Store, step: str) -> None:
        """A PodDisruptionBudget allowing no disruption of one running pod (labelled for it)."""
        running = sorted(
            (
                p
                for p in store.list("pods")[0]
                if (p.get("spec") or {}).get("nodeName")
                and not is_finished(p)
                and PDB_LABEL not in (meta(p).get("labels") or {})
                and not meta(p).get("deletionTimestamp")
            ),
            key=lambda p: (meta(p)["namespace"], meta(p)["name"]),
        )
        if not running:
            return
        pod = running[int(self._draw("pick", step) * len(running))]
        namespace, name = meta(pod)["namespace"], meta(pod)["name"]
        label = f"pdb-{self._step}"

        def labelled(obj: dict) -> None:
            obj["metadata"].setdefault("labels", {})[PDB_LABEL] = label

        try:
            store.mutate("pods", namespace, name, labelled)
        except NotFound:
            return
        budget = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": label, "namespace": namespace},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {PDB_LABEL: label}}},
        }
        if self.cluster is not None:
            self.cluster.create_object("poddisruptionbudgets", budget, namespace)
        else:
            store.create("poddisruptionbudgets", budget)
        self.record("pdb", f"{namespace}/{name}")


def _patch_shape(body: bytes) -> str:
    """What a PATCH body changes, without its values: a JSON patch's operations and paths, or
    a merge patch's keys two levels deep (``status.conditions``, ``status.nominatedNodeName``)."""
    try:
        patch = json.loads(body or b"null")
    except ValueError:
        return ""
    if isinstance(patch, list):
        return ",".join(f"{op.get('op')}:{op.get('path')}" for op in patch if isinstance(op, dict))
    if isinstance(patch, dict):
        return ",".join(
            f"{k}.{sub}" if isinstance(v, dict) and v else k
            for k, v in sorted(patch.items())
            for sub in (sorted(v) if isinstance(v, dict) and v else [""])
        )
    return ""


def _not_ready(node: dict) -> None:
    status = node.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
    conditions.append({"type": "Ready", "status": "False", "reason": "KubeletNotReady"})
    status["conditions"] = conditions
    _tainted(node, NOT_READY_TAINT)


def _tainted(node: dict, taint: dict | None = None) -> None:
    taint = taint or FAULT_TAINT
    taints = node.setdefault("spec", {}).setdefault("taints", [])
    if not any(t.get("key") == taint["key"] for t in taints):
        taints.append(dict(taint))


def _events(events: list[dict]) -> Iterator[dict]:
    """A watch stream of these events (a generator: the server closes the streams it sends)."""
    yield from events
