"""Session, Statement, plugin tiers and the writer that applies a cycle's decisions."""
