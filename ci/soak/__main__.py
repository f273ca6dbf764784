"""`python -m ci.soak`: `ci.soak.command`; `merge`, `summary`: their modules."""

import sys

from ci.cli import run_command
from ci.soak.command import main
from ci.soak.merge import main as merge_main
from ci.soak.summary import main as summary_main

if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["merge"]:
        run_command("ci.soak merge", lambda: merge_main(arguments[1:]))
    if arguments[:1] == ["summary"]:
        run_command("ci.soak summary", lambda: summary_main(arguments[1:]))
    run_command("ci.soak", lambda: main(arguments))
