from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.urls import path
from django.views.generic import RedirectView

from dashboard import views, webhooks
from dashboard.views.metrics import metrics_view
from dashboard.whatif import views as whatif

urlpatterns = [
    path("", views.overview, name="overview"),
    path("queues/", views.queue_tree, name="queue-tree"),
    path("queues/<str:name>/", views.queue_detail, name="queue"),
    path("pods/", views.pods, name="pods"),
    path("pods/<str:namespace>/<str:name>/", views.pod_detail, name="pod"),
    path("namespaces/", views.namespaces, name="namespaces"),
    path("namespaces/<str:name>/opt-in/", views.namespace_toggle, name="namespace-toggle"),
    path("history/", views.history, name="history"),
    path("risks/", views.risks, name="risks"),
    path("scheduler/", views.scheduler, name="scheduler"),
    path("scheduler/banner/", views.scheduler_banner, name="scheduler-banner"),
    path("autoscaler/", views.autoscaler, name="autoscaler"),
    path("whatif/", whatif.experiments, name="whatif"),
    path("whatif/start/", whatif.start, name="whatif-start"),
    path("whatif/<int:pk>/", whatif.comparison, name="whatif-comparison"),
    path("whatif/<int:pk>/progress/", whatif.progress, name="whatif-progress"),
    path("whatif/<int:pk>/cancel/", whatif.cancel, name="whatif-cancel"),
    path("whatif/<int:pk>/experiment.yaml", whatif.export, name="whatif-export"),
    path("whatif/<int:pk>/variants/<int:position>/pods/", whatif.pods, name="whatif-pods"),
    path("healthz", views.healthz, name="healthz"),
    path("healthz/ready", views.health.healthz_ready, name="healthz-ready"),
    path("healthz/scheduler", views.health.healthz_scheduler, name="healthz-scheduler"),
    path("metrics", metrics_view, name="metrics"),
    path("webhooks/mutate-pods", webhooks.mutate_pods, name="mutate-pods"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The login form's former address (bookmarks, older links).
    path(
        "accounts/login/",
        login_not_required(RedirectView.as_view(pattern_name="login", query_string=True)),
    ),
    path("admin/", admin.site.urls),
]
