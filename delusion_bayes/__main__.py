"""``python -m delusion_bayes`` is the same as the ``delusion-bayes`` console script."""

import sys

from delusion_bayes.cli import main

if __name__ == "__main__":
    sys.exit(main())
