"""Build configuration beyond pyproject.toml: ruda's optional C accelerator.

``ruda/_speedups.c`` and the parts it includes from ``ruda/_speedups_c/`` (plain CPython C API)
are built where a C compiler exists; ``optional=True`` makes a failed build a warning, and ruda
then runs its pure-Python code (as with ``RUDA_PURE_PYTHON=1``).
"""
import glob

from setuptools import Extension, setup

# the parts that ruda/_speedups.c includes (a rebuild when they change; shipped in the sdist)
PARTS = sorted(glob.glob("ruda/_speedups_c/*.h"))
setup(ext_modules=[Extension("ruda._speedups", ["ruda/_speedups.c"], depends=PARTS, optional=True)])
