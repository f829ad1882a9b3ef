"""Simulated cluster autoscalers (Cluster-Autoscaler-like and Karpenter-like) and the records
of their scale-ups, kept to measure false scale-ups and wasted node-time."""

from simcluster.autoscaler.cluster_autoscaler import ClusterAutoscaler
from simcluster.autoscaler.common import (
    ScalingGroup,
    ca_is_unschedulable,
    ca_nominated_to_existing_node,
    karpenter_is_provisionable,
)
from simcluster.autoscaler.karpenter import Karpenter
from simcluster.autoscaler.records import Ledger, ScaleDown, ScaleUp, TriggeringPod

__all__ = [
    "ClusterAutoscaler",
    "Karpenter",
    "Ledger",
    "ScalingGroup",
    "ScaleDown",
    "ScaleUp",
    "TriggeringPod",
    "ca_is_unschedulable",
    "ca_nominated_to_existing_node",
    "karpenter_is_provisionable",
]
