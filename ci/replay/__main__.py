"""`python -m ci.replay`: see `ci.replay.command`."""

from ci.replay.command import main

if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.replay", main)
