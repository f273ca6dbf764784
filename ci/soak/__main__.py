"""`python -m ci.soak`: see `ci.soak.command`."""

import sys

from ci.soak.command import main

if __name__ == "__main__":
    sys.exit(main())
