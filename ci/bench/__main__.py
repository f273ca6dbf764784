"""`python -m ci.bench SUBJECT`: see `ci.bench.command`."""

from ci.bench.command import main

if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.bench", main)
