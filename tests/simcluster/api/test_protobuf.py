"""kubectl's typed clients send protobuf (``kubectl create namespace|configmap|priorityclass|
poddisruptionbudget``) and do not fall back to JSON on a 415: the simulated API server reads
those bodies, answers JSON, and refuses what it cannot read with a 4xx."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simcluster.api.protobuf import MAGIC, PROTOBUF, to_json
from tests.fuzz.strategies import fuzz_settings


def field(number: int, payload: bytes) -> bytes:
    return bytes([number << 3 | 2, len(payload)]) + payload


def varint_field(number: int, value: int) -> bytes:
    out = bytearray([number << 3])
    value &= (1 << 64) - 1
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = field(1, api_version.encode()) + field(2, kind.encode())
    return MAGIC + field(1, type_meta) + field(2, raw) + field(3, b"") + field(4, b"")


# What kubectl v1.32 sends for `kubectl create namespace team-x` (its -v=8 dump).
KUBECTL_NAMESPACE = bytes.fromhex(
    "6b3873000a0f0a0276311209 4e616d657370616365121e0a160a067465616d2d7812001a0022002a003200"
    "380042001200 1a020a001a002200".replace(" ", "")
)


def test_kubectls_namespace_reads_as_its_json():
    assert to_json(KUBECTL_NAMESPACE) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-x"},
    }


def test_maps_repeated_fields_ints_and_int_or_string():
    label = field(11, field(1, b"team") + field(2, b"ml"))
    meta = field(1, field(1, b"c") + label + field(14, b"keep"))
    configmap = (
        meta
        + field(2, field(1, b"a") + field(2, b"b"))
        + field(3, field(1, b"k") + field(2, b"\x00\xff"))
    )
    assert to_json(envelope("v1", "ConfigMap", configmap)) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"team": "ml"}, "finalizers": ["keep"]},
        "data": {"a": "b"},
        "binaryData": {"k": "AP8="},
    }
    priority = field(1, field(1, b"low")) + varint_field(2, -5) + varint_field(3, 0)
    assert to_json(envelope("scheduling.k8s.io/v1", "PriorityClass", priority))["value"] == -5
    spec = field(1, varint_field(2, 0)) + field(3, varint_field(1, 1) + field(3, b"50%"))
    pdb = field(1, field(1, b"p")) + field(2, spec)
    assert to_json(envelope("policy/v1", "PodDisruptionBudget", pdb))["spec"] == {
        "minAvailable": 0,
        "maxUnavailable": "50%",
    }


def post(sim, path: str, raw: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(
        sim.server.url + path, data=raw, method="POST", headers={"Content-Type": PROTOBUF}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_kind_not_read_in_protobuf_is_a_415_and_a_broken_body_a_400(sim):
    code, status = post(sim, "/api/v1/namespaces/default/pods", envelope("v1", "Pod", b""))
    assert code == 415 and "protobuf is read for Namespace" in status["message"]
    code, status = post(sim, "/api/v1/namespaces", KUBECTL_NAMESPACE[:-7])
    assert code == 400 and "could not be decoded" in status["message"]
    code, _ = post(sim, "/api/v1/namespaces", b"{}")
    assert code == 400


@fuzz_settings(300)
@given(st.binary(max_size=120).map(lambda tail: MAGIC + tail) | st.binary(max_size=120))
def test_any_protobuf_body_is_taken_or_a_4xx(sim, raw):
    code, status = post(sim, "/api/v1/namespaces", raw)
    assert code == 201 or 400 <= code < 500, status


@pytest.mark.kubectl
@pytest.mark.parametrize(
    ("args", "check"),
    [
        (["create", "namespace", "team-x"], ["get", "namespace", "team-x"]),
        (["create", "configmap", "c1", "--from-literal=a=b"], ["get", "configmap", "c1"]),
        (["create", "priorityclass", "high", "--value=1000"], ["get", "priorityclass", "high"]),
        (
            ["create", "poddisruptionbudget", "pdb", "--selector=app=a", "--min-available=1"],
            ["get", "poddisruptionbudget", "pdb"],
        ),
    ],
)
def test_kubectl_create_works_in_protobuf(kubectl, args, check):
    created = kubectl(*args)

    assert "created" in created.stdout
    shown = kubectl(*check, "-o", "json")
    assert json.loads(shown.stdout)["metadata"]["name"] == args[2]
