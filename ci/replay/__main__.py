"""`python -m ci.replay`: see `ci.replay.command`."""

import sys

from ci.replay.command import main

if __name__ == "__main__":
    sys.exit(main())
