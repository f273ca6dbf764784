"""`python -m ci.explore`: see `ci.explore.command`."""

import sys

from ci.explore.command import main

if __name__ == "__main__":
    sys.exit(main())
