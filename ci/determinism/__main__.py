"""`python -m ci.determinism`: see `ci.determinism.command`."""

from ci.determinism.command import main

if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.determinism", main)
