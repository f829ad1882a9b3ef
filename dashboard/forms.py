"""Forms: filters for the list pages and the namespace opt-in toggle (which labels the
namespace in the cluster and records who did it)."""

from __future__ import annotations

from django import forms

from dashboard.models import NamespaceOptInChange
from dashboard.selectors.cluster import cluster_call, core_api
from dashboard.selectors.pods import STATES
from scheduler.api.labels import QUEUE_ALLOCATION_GATE


class PodFilterForm(forms.Form):
    state = forms.ChoiceField(
        required=False, choices=[("", "any")] + [(s.value, s.label) for s in STATES]
    )
    queue = forms.CharField(required=False, max_length=253)
    namespace = forms.CharField(required=False, max_length=253)
    name = forms.CharField(
        required=False, max_length=253, label="Name contains", widget=forms.SearchInput
    )


class CycleFilterForm(forms.Form):
    queue = forms.CharField(required=False, max_length=253)
    pod = forms.CharField(required=False, max_length=253, label="Pod name contains")
    since = forms.DateTimeField(
        required=False, widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )
    until = forms.DateTimeField(
        required=False, widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )

    def clean(self):
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            raise forms.ValidationError("“since” must be before “until”.")
        return data


class NamespaceOptInForm(forms.Form):
    """Switch a namespace's opt-in; ``confirm`` makes the user say it twice."""

    enabled = forms.BooleanField(required=False)
    confirm = forms.BooleanField(
        required=True, label="Yes, change the opt-in of every new pod in this namespace"
    )

    def save(self, *, namespace: str, user) -> NamespaceOptInChange:
        """Label (or unlabel) the namespace, then record the change; a ClusterError (in words:
        ObjectNotFound when the namespace does not exist) records nothing."""
        enabled = self.cleaned_data["enabled"]
        label = {"metadata": {"labels": {QUEUE_ALLOCATION_GATE: "true" if enabled else None}}}
        core = core_api()
        cluster_call(
            f"label namespace {namespace}",
            lambda **kw: core.patch_namespace(namespace, label, **kw),
            target=f"namespace {namespace}",
        )
        return NamespaceOptInChange.objects.create(
            namespace=namespace, enabled=enabled, changed_by=user
        )
