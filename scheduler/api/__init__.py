"""Volcano's scheduler API model: resources, tasks, jobs, nodes and queues."""
