"""``python manage.py simcluster``: run the simulated Kubernetes cluster until Ctrl-C."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from simcluster.api.app import SimClusterOptions, serve
from simcluster.runtime import AUTOSCALERS
from simcluster.scenario import ScenarioError


class Command(BaseCommand):
    help = "Serve a Kubernetes-compatible simulated cluster on loopback and write a kubeconfig."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind")
        parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
        parser.add_argument("--kubeconfig", default=".run/kubeconfig")
        parser.add_argument("--scenario", default="demo", help="demo, empty, openb or a YAML file")
        parser.add_argument("--speed", type=float, default=1.0, help="simulated seconds per second")
        parser.add_argument("--webhook-url", default="", help="mutating admission webhook for pods")
        parser.add_argument("--webhook-failure-policy", choices=["Fail", "Ignore"], default="Fail")
        parser.add_argument("--webhook-timeout", type=float, default=10.0, help="seconds")
        parser.add_argument(
            "--webhook-service",
            action="append",
            default=[],
            metavar="NAME.NAMESPACE.svc=PORT",
            help="call a MutatingWebhookConfiguration's clientConfig.service NAME in NAMESPACE "
            "at 127.0.0.1:PORT (the simulated cluster's stand-in for the cluster's DNS); "
            "repeatable",
        )
        parser.add_argument("--autoscaler", choices=AUTOSCALERS, default="none")
        parser.add_argument(
            "--state",
            default="",
            help="keep the cluster in this file (snapshot + FILE.journal): restored on start, "
            "every change journaled before the API answers",
        )
        parser.add_argument(
            "--faults",
            default="",
            help="seeded faults (off by default): 'all', 'all=0.02' or "
            "'seed=7,conflict=0.05,throttle=0.03,watchGone=0.5,nodeNotReady=0.01,…' "
            "(simcluster.faults); replaces the scenario's faults: section",
        )
        parser.add_argument(
            "--node-groups-file",
            default="",
            help="write the autoscaler's node groups here, for SLUICE_ADMISSION_NODE_GROUPS",
        )

    def handle(self, *args, **options) -> None:
        fields = SimClusterOptions.__dataclass_fields__
        chosen = {key: value for key, value in options.items() if key in fields}
        try:
            serve(SimClusterOptions(**chosen), announce=self.stdout.write)
        except (ScenarioError, ValueError, OSError) as error:
            raise CommandError(str(error)) from error
