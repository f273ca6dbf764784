"""Deliberately broken systems under test; the suite must catch every one."""
