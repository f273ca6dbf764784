"""Reference model of the public scheduler, `LocalScheduler` (see `table.py`)."""
