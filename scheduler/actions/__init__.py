"""Actions run in configured order within a session: enqueue, allocate, backfill, …"""
