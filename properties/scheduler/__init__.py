"""Properties of the public scheduler, `LocalScheduler` (see `invariants.py`)."""
