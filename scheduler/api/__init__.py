"""Volcano's scheduler API model: resources, tasks, jobs, nodes and queues."""

from scheduler.api.helpers import (
    InputError,
    has_only_volcano_scheduling_gate,
    has_queue_allocation_gate_annotation,
)
from scheduler.api.job_info import JobInfo
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from scheduler.api.node_info import NodeInfo
from scheduler.api.queue_info import QueueInfo
from scheduler.api.resource import Resource
from scheduler.api.task_info import TaskInfo, TaskStatus, TransactionContext, allocated_status

__all__ = [
    "QUEUE_ALLOCATION_GATE",
    "InputError",
    "JobInfo",
    "NodeInfo",
    "QueueInfo",
    "Resource",
    "TaskInfo",
    "TaskStatus",
    "TransactionContext",
    "allocated_status",
    "has_only_volcano_scheduling_gate",
    "has_queue_allocation_gate_annotation",
]
