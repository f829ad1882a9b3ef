"""Create the local admin account on first run, with a generated password kept under .run/."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from dashboard.runtime import RUN_DIR, generated_secret


class Command(BaseCommand):
    help = "Create the local 'admin' superuser if no superuser exists; print how to log in."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")

    def handle(self, *args, username: str, **options) -> None:
        users = get_user_model()
        password_file = RUN_DIR / "admin_password"
        if not users.objects.filter(is_superuser=True).exists():
            password = generated_secret("admin_password", length=18)
            users.objects.create_superuser(username=username, email="", password=password)
            self.stdout.write(f"Created superuser '{username}'.")
        if password_file.exists():
            self.stdout.write(
                f"Log in as '{username}' with the password in {password_file} "
                f"(cat {password_file})."
            )
