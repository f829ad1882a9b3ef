"""Scheduler plugins: each registers callbacks on the Session in ``on_session_open``."""
