"""`python -m ci.soak`: see `ci.soak.command`; `merge`: see `ci.soak.merge`."""

import sys

from ci.cli import run_command
from ci.soak.command import main
from ci.soak.merge import main as merge_main

if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["merge"]:
        run_command("ci.soak merge", lambda: merge_main(arguments[1:]))
    run_command("ci.soak", lambda: main(arguments))
