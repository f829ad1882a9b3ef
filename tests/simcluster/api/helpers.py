"""Raw HTTP for what the typed client cannot send (malformed bodies, odd content types)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request


def http(
    url: str,
    method: str,
    path: str,
    body: object = None,
    *,
    content_type: str = "application/json",
    raw: bytes | None = None,
    accept: str = "application/json",
) -> tuple[int, dict]:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(
        url + path,
        data=data,
        method=method,
        headers={"Content-Type": content_type, "Accept": accept},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
