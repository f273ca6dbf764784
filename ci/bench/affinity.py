"""`python -m ci.bench.affinity [--examples N] [--rounds N] [--workers N]`.

`python -m ci.bench affinity` with 200 derandomized programs and 2 workers
unless told otherwise: the affinity machine, the affinity corpus replayed,
and the machine in two processes at once (see `ci.bench.command`).
"""

from ci.bench.command import subject_main

main = subject_main("affinity", "--examples", "200", "--workers", "2")

if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.bench.affinity", main)
