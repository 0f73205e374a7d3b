"""Reusable console widgets (generic: no lab.db, no screen-specific logic)."""
