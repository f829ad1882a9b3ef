"""Every label, annotation and gate name Sluice reads or writes, in one place.

The engine, the dashboard and the simulated cluster all name objects the same way; the
simulated cluster's own marks (``sim.sluice.io/…``) are here too because the dashboard and the
node-capacity check read them from any cluster that carries them.
"""

from __future__ import annotations

# Volcano's (scheduling.volcano.sh/v1beta1 labels.go, and the gate-controlled scheduling design
# document "Gate-Controlled Scheduling for Cluster Autoscalers Compatibility").
QUEUE_ALLOCATION_GATE = "scheduling.volcano.sh/queue-allocation-gate"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
# Written with the removal of our gate: when the pod passed its queue check and began to hold
# its queue room (a gate reservation). On the pod, it outlives a scheduler restart or failover.
QUEUE_RESERVATION_ANNOTATION = "sluice.io/queue-reservation-since"
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
PREEMPTABLE = "volcano.sh/preemptable"

# Kubernetes'.
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
HOSTNAME_LABEL = "kubernetes.io/hostname"

# Queues every Volcano cluster has.
DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"

# The simulated cluster's marks on the nodes its autoscalers add and the pods it plays.
NODE_GROUP_LABEL = "sim.sluice.io/node-group"
PROVISIONER_LABEL = "sim.sluice.io/provisioner"
SCALE_UP_ANNOTATION = "sim.sluice.io/scale-up"
DURATION_ANNOTATION = "sim.sluice.io/duration"
# A pod the simulated kubelet never finishes terminating (its node stopped answering, a
# container ignores SIGTERM and the kubelet hangs): deleted, it stays Terminating for ever.
NEVER_TERMINATES_ANNOTATION = "sim.sluice.io/never-terminates"
# The kubeconfig cluster extension in which the simulated cluster describes its clock.
CLOCK_EXTENSION = "sim.sluice.io/clock"
