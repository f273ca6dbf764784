"""`python -m ci.bench.scheduler`: `python -m ci.bench scheduler` (see there)."""

from ci.bench.command import subject_main

main = subject_main("scheduler")

if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.bench.scheduler", main)
