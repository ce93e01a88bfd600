"""``python -m ruda.bench``: see :mod:`ruda.bench`."""
import sys

from ruda.bench import main

if __name__ == "__main__":
    sys.exit(main())
