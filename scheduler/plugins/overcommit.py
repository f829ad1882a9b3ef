"""overcommit: admit jobs while the cluster, overcommitted by a factor, has room for them
(``pkg/scheduler/plugins/overcommit/overcommit.go`` at Volcano commit
ed72c7c815a9fd547a787134676f73d42e9d049c).

The cluster's idle room is its total (every node's allocatable) times ``overcommit-factor``
(default 1.2; below 1, the default is used, as Volcano does) less what its nodes' pods use.
A job is admitted while its minResources, with what admitted jobs still claim, fits that room
in every resource it asks for; a job without minResources is admitted. What admitted jobs
claim: an Inqueue job's whole minResources, a Running job's whose allocated tasks reach
minMember the part of its minResources not allocated yet — in both, less the requests of its
pods held by scheduling gates other than Volcano's queue-allocation gate, so that pods not
yet created for scheduling do not keep other jobs out (Volcano's pod scheduling readiness
design).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scheduler.api.job_info import PG_INQUEUE, PG_RUNNING, JobInfo
from scheduler.api.quantity import PODS
from scheduler.api.resource import Resource, exceeded_part
from scheduler.api.status import SUCCESS, Code, Status
from scheduler.api.task_info import allocated_status
from scheduler.plugins.base import Plugin

if TYPE_CHECKING:
    from scheduler.framework.session import Session

log = logging.getLogger(__name__)

FACTOR = "overcommit-factor"
DEFAULT_FACTOR = 1.2


class OvercommitPlugin(Plugin):
    name = "overcommit"
    ARGUMENTS = {FACTOR: DEFAULT_FACTOR}

    def on_session_open(self, ssn: Session) -> None:
        factor = self.argument(FACTOR)
        if factor < 1.0:
            log.warning("overcommit: %s %s is below 1; using %s", FACTOR, factor, DEFAULT_FACTOR)
            factor = DEFAULT_FACTOR
        total, used = Resource(), Resource()
        for node in ssn.nodes.values():
            total.add(node.allocatable)
            used.add(node.used)
        self.idle = total.multi(factor).sub(used)
        self.inqueue = Resource()
        for job in ssn.jobs.values():
            self.inqueue.add(_claimed(job))
        ssn.add_job_enqueueable_fn(self, self.job_enqueueable)
        ssn.add_job_enqueued_fn(self, self.job_enqueued)

    def job_enqueueable(self, job: JobInfo) -> Status:
        min_req = job.min_resources
        if min_req is None:
            return SUCCESS  # best effort: Volcano permits it
        future = self.inqueue.clone().add(min_req)
        # Only what the job asks for is compared (pods aside: every pod takes one).
        asked = sorted(k for k, v in min_req.values.items() if v > 0 and k != PODS)
        short = [k for k in asked if future.get(k) > self.idle.get(k)]
        if not short:
            return SUCCESS
        overused = ", ".join(f"overused {k}" for k in short)
        message = f"resource in cluster is overused: {overused}"
        # Held at admission by the cluster's room, not by its queue's: no queue code.
        return Status(Code.ADMISSION_HELD, self.name, message)

    def job_enqueued(self, job: JobInfo) -> None:
        if job.min_resources is not None:
            self.inqueue.add(job.deduct_sch_gated_resources(job.min_resources))


def _claimed(job: JobInfo) -> Resource:
    if job.min_resources is None:
        return Resource()
    if job.phase == PG_INQUEUE:
        return job.deduct_sch_gated_resources(job.min_resources)
    placed = sum(len(tasks) for status, tasks in job.index.items() if allocated_status(status))
    if job.phase == PG_RUNNING and placed >= job.min_available:
        return job.deduct_sch_gated_resources(exceeded_part(job.min_resources, job.allocated))
    return Resource()


__all__ = ["OvercommitPlugin"]
