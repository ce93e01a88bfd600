"""ruda's version: the bottom of the layering (the package and its caches read it from here)."""
__version__ = "0.1.0"
