"""Core v1 Secrets in the simulated cluster, written and refused as kube-apiserver does: what
the webhook's certificate Job creates and reads (deploy/components/webhook)."""

from __future__ import annotations

import base64
import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.simcluster.api.conftest import Sim
from tests.simcluster.api.helpers import http

PATH = "/api/v1/namespaces/default/secrets"


def secret(name: str, **fields: object) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def refusal(error: pytest.ExceptionInfo[ApiException]) -> dict:
    return json.loads(error.value.body)


def test_string_data_is_merged_into_data_and_never_stored(sim: Sim) -> None:
    created = sim.core.create_namespaced_secret(
        "default",
        client.V1Secret(
            metadata=client.V1ObjectMeta(name="creds"),
            data={"user": b64("admin"), "password": b64("old")},
            string_data={"password": "s3cret", "token": "t"},
        ),
    )
    assert created.type == "Opaque"  # defaulted
    assert created.data == {"user": b64("admin"), "password": b64("s3cret"), "token": b64("t")}
    assert created.string_data is None
    stored = sim.store.get("secrets", "default", "creds")
    assert "stringData" not in stored and stored["data"]["password"] == b64("s3cret")
    read = sim.core.read_namespaced_secret("creds", "default")
    assert base64.b64decode(read.data["token"]) == b"t"
    listed = sim.core.list_namespaced_secret("default").items
    assert [s.metadata.name for s in listed] == ["creds"]


def test_data_that_is_not_base64_fails_decoding_with_400_naming_the_field(sim: Sim) -> None:
    """kube-apiserver decodes ``data`` into []byte before validating: a value that is not
    base64 is its decoder's 400 (the message has the byte, not the field; the details name
    the field), and nothing is stored."""
    status, answer = http(
        sim.server.url, "POST", PATH, secret("plain", data={"ok": b64("x"), "pw": "hunter2!"})
    )
    assert status == 400
    assert answer["message"] == (
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 7'
    )
    assert answer["details"]["causes"][0]["field"] == "data[pw]"
    assert sim.store.list("secrets")[0] == []
    # Go's decoder skips newlines in base64; the value is stored re-encoded.
    status, answer = http(sim.server.url, "POST", PATH, secret("wrapped", data={"k": "aGVs\nbG8="}))
    assert status == 201 and answer["data"] == {"k": b64("hello")}


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"data": {"a b": ""}}, "data[a b]", "a valid config key"),
        ({"type": "kubernetes.io/tls", "data": {"tls.crt": b64("c")}}, "data[tls.key]",
         "Required value"),
        ({"type": "kubernetes.io/basic-auth"}, "data[username]", "Required value"),
        ({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64("{")}},
         "data[.dockerconfigjson]", "<secret contents redacted>"),
        ({"type": "kubernetes.io/service-account-token"},
         "metadata.annotations[kubernetes.io/service-account.name]", "Required value"),
        ({"data": {"big": b64("x" * (1 << 20 + 1))}}, "data", "Too long"),
    ],
)  # fmt: skip
def test_what_validate_secret_refuses_is_422_naming_the_field(
    sim: Sim, fields: dict, field: str, message: str
) -> None:
    status, answer = http(sim.server.url, "POST", PATH, secret("bad", **fields))
    assert status == 422, answer
    assert answer["reason"] == "Invalid"
    causes = {c["field"]: c["message"] for c in answer["details"]["causes"]}
    assert field in causes and message in causes[field]
    assert f"{field}: " in answer["message"]


def test_type_is_immutable_on_update_and_patch(sim: Sim) -> None:
    tls = secret(
        "web-tls", type="kubernetes.io/tls", data={"tls.crt": b64("c"), "tls.key": b64("k")}
    )
    assert http(sim.server.url, "POST", PATH, tls)[0] == 201
    with pytest.raises(ApiException) as patched:
        sim.core.patch_namespaced_secret("web-tls", "default", {"type": "Opaque"})
    assert patched.value.status == 422
    assert refusal(patched)["details"]["causes"][0]["field"] == "type"
    assert 'type: Invalid value: "Opaque": field is immutable' in refusal(patched)["message"]
    # A replace that leaves type out gets the default, Opaque: the same refusal.
    current = sim.store.get("secrets", "default", "web-tls")
    current.pop("type")
    status, answer = http(sim.server.url, "PUT", f"{PATH}/web-tls", current)
    assert status == 422 and answer["details"]["causes"][0]["field"] == "type"
    # Its data may change.
    sim.core.patch_namespaced_secret("web-tls", "default", {"stringData": {"tls.crt": "new"}})
    assert sim.store.get("secrets", "default", "web-tls")["data"]["tls.crt"] == b64("new")


def test_an_immutable_secret_keeps_its_data_and_stays_immutable(sim: Sim) -> None:
    http(sim.server.url, "POST", PATH, secret("fixed", immutable=True, data={"k": b64("v")}))
    with pytest.raises(ApiException) as changed:
        sim.core.patch_namespaced_secret("fixed", "default", {"data": {"k": b64("w")}})
    assert changed.value.status == 422
    assert [c["field"] for c in refusal(changed)["details"]["causes"]] == ["data"]
    with pytest.raises(ApiException) as unset:
        sim.core.patch_namespaced_secret("fixed", "default", {"immutable": False})
    assert [c["field"] for c in refusal(unset)["details"]["causes"]] == ["immutable"]
    assert sim.store.get("secrets", "default", "fixed")["data"] == {"k": b64("v")}


def test_secrets_are_listed_by_their_type_field(sim: Sim) -> None:
    tls = secret("web-tls", type="kubernetes.io/tls", data={"tls.crt": "", "tls.key": ""})
    for created in (tls, secret("plain", data={"k": b64("v")})):
        assert http(sim.server.url, "POST", PATH, created)[0] == 201
    listed = sim.core.list_namespaced_secret("default", field_selector="type=kubernetes.io/tls")
    assert [s.metadata.name for s in listed.items] == ["web-tls"]
    others = sim.core.list_secret_for_all_namespaces(field_selector="type!=kubernetes.io/tls")
    assert [s.metadata.name for s in others.items] == ["plain"]


def test_a_value_of_the_wrong_json_type_is_the_decoders_400(sim: Sim) -> None:
    status, answer = http(sim.server.url, "POST", PATH, secret("typed", data={"k": 3}))
    assert status == 400
    assert answer["message"].endswith(
        "json: cannot unmarshal number into Go struct field Secret.data of type []uint8"
    )


@pytest.mark.kubectl
def test_kubectl_creates_a_secret_in_protobuf_and_lists_it(sim: Sim, kubectl) -> None:
    """``kubectl create secret`` sends protobuf; ``get secrets`` prints TYPE and DATA."""
    out = kubectl(
        "create", "secret", "generic", "creds", "--from-literal=user=admin",
        "--from-literal=password=s3cret",
    ).stdout  # fmt: skip
    assert "secret/creds created" in out
    stored = sim.store.get("secrets", "default", "creds")
    assert stored["type"] == "Opaque"
    assert stored["data"] == {"user": b64("admin"), "password": b64("s3cret")}
    kubectl(
        "create", "secret", "generic", "basic", "--type=kubernetes.io/basic-auth",
        "--from-literal=username=admin",
    )  # fmt: skip
    assert sim.store.get("secrets", "default", "basic")["type"] == "kubernetes.io/basic-auth"
    row = kubectl("get", "secrets").stdout.splitlines()
    assert row[0].split() == ["NAME", "TYPE", "DATA", "AGE"]
    assert [line.split()[:3] for line in row[1:]] == [
        ["basic", "kubernetes.io/basic-auth", "1"],
        ["creds", "Opaque", "2"],
    ]
