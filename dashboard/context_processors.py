from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse

# (url name, label): only pages that exist are listed.
NAVIGATION = [
    ("overview", "Overview"),
]


def navigation(request: HttpRequest) -> dict:
    current = request.resolver_match.url_name if request.resolver_match else None
    return {
        "navigation": [
            {"url": reverse(name), "label": label, "current": name == current}
            for name, label in NAVIGATION
        ]
    }
