"""Thin wrapper: ``python bench/bench_core.py [options]`` == ``python -m ruda.bench [options]``."""
import sys

from ruda.bench import main

if __name__ == "__main__":
    sys.exit(main())
