"""`python -m ci.explore`: see `ci.explore.command`."""

from ci.explore.command import main

if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.explore", main)
