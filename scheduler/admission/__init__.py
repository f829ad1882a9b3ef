"""Admission: pod mutation (queue-allocation gate) and the node-capacity check of Kueue KEP-3211 (KEP PR #5042).

The node-capacity check lives in ``monitor`` (snapshot), ``evaluator`` (can it fit?),
``awaited`` (a PodGroup created before its pods, judged on its minResources), ``packing``
(the algorithm), ``ledger`` (what was admitted since the snapshot was taken),
``risk`` (dashboard risk classes) and ``check`` (admission states). It is wired into the
scheduler by ``source`` (snapshots from the cluster's API), ``node_groups``, ``context`` (the
long-lived ``Admission`` and the per-cycle ``AdmissionContext``), ``plugin`` (the enqueue
action's use of it) and ``report`` (risks in the CycleReport).
"""
