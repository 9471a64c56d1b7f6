"""``python -m delusion_bayes.sweep <multirun dir>`` is the same as ``delusion-bayes-summarize``."""

import sys

from delusion_bayes.sweep.summarize import summarize_main

if __name__ == "__main__":
    sys.exit(summarize_main())
