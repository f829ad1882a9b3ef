"""Who may read the pages: ``SLUICE_REQUIRE_LOGIN``, and the client address login throttling
counts failures against."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponseBase
from django.shortcuts import resolve_url
from django_htmx.http import HttpResponseClientRedirect

# Always open: Kubernetes probes, Prometheus' scrapes and the API server's admission calls
# carry no session.
OPEN_PATH_PREFIXES = ("/healthz", "/metrics", "/webhooks/")


class RequireLoginMiddleware(LoginRequiredMiddleware):
    """Django's LoginRequiredMiddleware, switched by ``settings.SLUICE_REQUIRE_LOGIN`` (read
    on every request). Views marked ``login_not_required`` (login, logout, the admin's login)
    and the paths above stay open. An htmx refresh whose session ended sends the whole page to
    the login form, not the form into a fragment of the page."""

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        if not settings.SLUICE_REQUIRE_LOGIN or request.path_info.startswith(OPEN_PATH_PREFIXES):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)

    def handle_no_permission(self, request: HttpRequest, view_func) -> HttpResponseBase:
        if getattr(request, "htmx", False):
            # Back to the page the browser shows (its path and query; never another host).
            shown = urlsplit(request.htmx.current_url or "")
            page = shown.path + (f"?{shown.query}" if shown.query else "") if shown.path else ""
            target = redirect_to_login(
                page or request.get_full_path(), resolve_url(self.get_login_url(view_func))
            )
            return HttpResponseClientRedirect(target["Location"])
        return super().handle_no_permission(request, view_func)


def client_ip(request: HttpRequest) -> str | None:
    """The client's address for login throttling (``AXES_CLIENT_IP_CALLABLE``).

    Behind ``SLUICE_TRUSTED_PROXY_COUNT`` proxies that each append the address they received
    from to X-Forwarded-For, the client is the entry that many places from the right: entries
    further left were written by the client itself and prove nothing."""
    count = settings.SLUICE_TRUSTED_PROXY_COUNT
    if count > 0:
        hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        hops = [h for h in hops if h]
        if len(hops) >= count:
            return hops[-count]
    return request.META.get("REMOTE_ADDR")
