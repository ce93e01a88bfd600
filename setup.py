"""Build configuration beyond pyproject.toml: ruda's optional C accelerator.

``ruda/_speedups.c`` (plain CPython C API) is built where a C compiler exists; ``optional=True``
makes a failed build a warning, and ruda then runs its pure-Python code (as with
``RUDA_PURE_PYTHON=1``).
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("ruda._speedups", ["ruda/_speedups.c"], optional=True)])
