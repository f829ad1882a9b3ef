"""The resources the simulated cluster serves, and the discovery documents that list them."""

from __future__ import annotations

from dataclasses import dataclass, field

VOLCANO_GROUP = "scheduling.volcano.sh"
VOLCANO_VERSION = "v1beta1"
VOLCANO_GROUP_VERSION = f"{VOLCANO_GROUP}/{VOLCANO_VERSION}"
SCHEDULING_GROUP = "scheduling.k8s.io"  # Kubernetes' own: PriorityClass
POLICY_GROUP = "policy"  # Kubernetes' own: PodDisruptionBudget
COORDINATION_GROUP = "coordination.k8s.io"  # Kubernetes' own: Lease (leader election)
ADMISSION_GROUP = "admissionregistration.k8s.io"  # Kubernetes' own: webhook configurations
CUSTOM_GROUPS = frozenset({VOLCANO_GROUP})  # served as CustomResourceDefinitions would be

VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True)
class Resource:
    plural: str  # also the Store kind
    kind: str
    group: str  # "" for core
    version: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    singular: str = ""
    subresources: tuple[str, ...] = ("status",)
    categories: tuple[str, ...] = field(default=())

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def custom(self) -> bool:
        """Custom resources (CRDs): no strategic merge patch, default Table columns."""
        return self.group in CUSTOM_GROUPS


RESOURCES: dict[str, Resource] = {
    r.plural: r
    for r in (
        Resource("namespaces", "Namespace", "", "v1", False, ("ns",), "namespace"),
        Resource("nodes", "Node", "", "v1", False, ("no",), "node"),
        Resource("pods", "Pod", "", "v1", True, ("po",), "pod", ("status", "binding", "eviction")),
        Resource("events", "Event", "", "v1", True, ("ev",), "event", ()),
        Resource("configmaps", "ConfigMap", "", "v1", True, ("cm",), "configmap", ()),
        Resource("secrets", "Secret", "", "v1", True, (), "secret", ()),
        Resource("queues", "Queue", VOLCANO_GROUP, VOLCANO_VERSION, False, ("q",), "queue"),
        Resource(
            "podgroups", "PodGroup", VOLCANO_GROUP, VOLCANO_VERSION, True, ("pg",), "podgroup"
        ),
        Resource(
            "priorityclasses",
            "PriorityClass",
            SCHEDULING_GROUP,
            "v1",
            False,
            ("pc",),
            "priorityclass",
            (),
        ),
        Resource(
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            POLICY_GROUP,
            "v1",
            True,
            ("pdb",),
            "poddisruptionbudget",
        ),
        Resource("leases", "Lease", COORDINATION_GROUP, "v1", True, (), "lease", ()),
        Resource(
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
            ADMISSION_GROUP,
            "v1",
            False,
            (),
            "mutatingwebhookconfiguration",
            (),
            ("api-extensions",),
        ),
    )
}

SUBRESOURCE_KINDS = {
    "status": None,  # same kind as the parent
    "binding": ("Binding", "v1", ("create",)),
    "eviction": ("Eviction", "policy/v1", ("create",)),
}


def resources_in(group: str, version: str) -> list[Resource]:
    return [r for r in RESOURCES.values() if r.group == group and r.version == version]


def version_document(git_version: str = "v1.32.0") -> dict:
    return {
        "major": "1",
        "minor": "32",
        "gitVersion": git_version,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def core_versions(server_address: str) -> dict:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def api_group_list() -> dict:
    groups = []
    for name in sorted({r.group for r in RESOURCES.values() if r.group}):
        versions = sorted({r.version for r in RESOURCES.values() if r.group == name})
        entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        groups.append({"name": name, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(group: str) -> dict | None:
    for entry in api_group_list()["groups"]:
        if entry["name"] == group:
            return {"kind": "APIGroup", "apiVersion": "v1", **entry}
    return None


def api_resource_list(group: str, version: str) -> dict | None:
    resources = resources_in(group, version)
    if not resources:
        return None
    listed = []
    for resource in resources:
        listed.append(_api_resource(resource))
        listed.extend(_subresource_entries(resource))
    if not group:  # the legacy pod-binding collection kube-apiserver still serves
        listed.append(
            {
                "name": "bindings",
                "singularName": "binding",
                "namespaced": True,
                "kind": "Binding",
                "verbs": ["create"],
            }
        )
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "groupVersion": group_version, "resources": listed}


def _api_resource(resource: Resource) -> dict:
    entry = {
        "name": resource.plural,
        "singularName": resource.singular,
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": VERBS,
    }
    if resource.short_names:
        entry["shortNames"] = list(resource.short_names)
    if resource.categories:
        entry["categories"] = list(resource.categories)
    return entry


def _subresource_entries(resource: Resource) -> list[dict]:
    entries = []
    for sub in resource.subresources:
        spec = SUBRESOURCE_KINDS[sub]
        kind, verbs, extra = resource.kind, ["get", "patch", "update"], {}
        if spec is not None:
            kind, group_version, verbs = spec[0], spec[1], list(spec[2])
            if "/" in group_version:
                extra = dict(zip(("group", "version"), group_version.split("/"), strict=True))
        entries.append(
            {
                "name": f"{resource.plural}/{sub}",
                "singularName": "",
                "namespaced": resource.namespaced,
                "kind": kind,
                "verbs": verbs,
                **extra,
            }
        )
    return entries
