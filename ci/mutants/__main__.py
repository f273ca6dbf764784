"""`python -m ci.mutants`: see `ci.mutants.command`."""

from ci.mutants.command import main

if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.mutants", main)
