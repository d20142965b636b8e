"""``python -m pullback``: the same command line as the ``pullback`` console script."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
