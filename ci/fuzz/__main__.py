"""`python -m ci.fuzz`: see `ci.fuzz.command`."""

import sys

from ci.fuzz.command import main

if __name__ == "__main__":
    sys.exit(main())
