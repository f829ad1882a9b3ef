"""Admission: pod mutation (queue-allocation gate) and the node-capacity check of seed 004.

The node-capacity check lives in ``monitor`` (snapshot), ``evaluator`` (can it fit?),
``packing`` (the algorithm), ``risk`` (dashboard risk classes) and ``check`` (admission states).
"""
