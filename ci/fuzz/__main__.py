"""`python -m ci.fuzz`: see `ci.fuzz.command`."""

from ci.fuzz.command import main

if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.fuzz", main)
