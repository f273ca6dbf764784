"""`python -m ci.determinism`: see `ci.determinism.command`."""

import sys

from ci.determinism.command import main

if __name__ == "__main__":
    sys.exit(main())
