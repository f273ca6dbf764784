"""`python -m ci.production`: see `ci.production`."""

from ci.production import main

if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.production", main)
