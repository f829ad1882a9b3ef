"""The simulated cluster: a Kubernetes-compatible API over an in-memory store, a kubelet and
autoscalers, all driven by an injectable clock."""
