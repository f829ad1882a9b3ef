from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from dashboard import views, webhooks

urlpatterns = [
    path("", views.overview, name="overview"),
    path("healthz", views.healthz, name="healthz"),
    path("webhooks/mutate-pods", webhooks.mutate_pods, name="mutate-pods"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
