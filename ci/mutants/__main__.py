"""`python -m ci.mutants`: see `ci.mutants.command`."""

import sys

from ci.mutants.command import main

if __name__ == "__main__":
    sys.exit(main())
