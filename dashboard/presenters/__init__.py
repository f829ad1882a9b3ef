"""Presentation: bars, charts and words, made from what selectors read.

Nothing here queries the database or the cluster, and nothing recomputes a figure the engine
reported: wording is decided from the report's status codes, states and risk classes.
"""
