"""ruda's import layering, checked on the source with ``ast`` (nothing is imported).

Each module may import only its own layer and those below it:

1. ``ruda._dtypes``, ``ruda._version``, ``ruda._hints`` (keyword and attribute hints for NumPy
   and PyTorch spellings), ``ruda.runtime``: kernel IR, renderers, packing, caches, tuner,
   checksums; they know nothing of arrays.  The C accelerator ``ruda._speedups`` (it
   imports no ruda module) sits here too: the array's base type and the CRC-32 come from it.
2. ``ruda.backends``: the contract (``ruda/backends/__init__.py``) and one package per device.
3. ``ruda._devices``, ``ruda._array``, ``ruda._host_conversion`` (the array's NumPy conversion
   policy: ``Array.__array__`` asks it; the namespace re-exports ``allow_host_conversion``).
4. The namespace: ``ruda`` itself, the other ``ruda._*`` modules, ``ruda.linalg``, ``ruda.fft``,
   ``ruda.random``.
5. ``ruda.nn``, ``ruda.distributed``, ``ruda.data``, ``ruda.bench``, ``ruda.__main__``: they use
   the public API (``import ruda``) and the backend contract, never a private module of layers 3-4
   (``ruda._array``) nor an array's private members (``Array._new``, ``x._data``).

Every import counts, at any depth (lazy ones inside functions too). Within one package, two
modules importing each other (at any depth) are a cycle and fail as well.
"""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "ruda"

# (module or package prefix, layer); the longest matching prefix wins.
LAYERS = [
    ("ruda._dtypes", 1), ("ruda._version", 1), ("ruda._hints", 1), ("ruda.runtime", 1),
    ("ruda._speedups", 1),     # a C extension: imports no ruda module
    ("ruda.backends", 2),
    ("ruda._devices", 3), ("ruda._array", 3), ("ruda._host_conversion", 3),
    ("ruda", 4), ("ruda.linalg", 4), ("ruda.fft", 4), ("ruda.random", 4),
    ("ruda.nn", 5), ("ruda.distributed", 5), ("ruda.data", 5), ("ruda.bench", 5),
    ("ruda.__main__", 5),
]

# Device libraries: layer 1 knows no device, so it imports none of them (a backend does).
DEVICE_LIBS = {"cupy", "cupyx", "cupy_backends", "wgpu", "numba", "mpi4py"}

# Private members of an array that layer 5 must not touch (``x._data``, ``Array._new``, ...).
ARRAY_PRIVATE = {"_data", "_new", "_dtype", "_device"}

# Known violations: (importing module, imported module or ".attr") -> why. Remove an entry
# when its violation is fixed: an entry that no longer matches fails the test too.
ALLOWED = {}


def layer(mod):
    best, lay = "", None
    for prefix, n in LAYERS:
        if (mod == prefix or mod.startswith(prefix + ".")) and len(prefix) > len(best):
            best, lay = prefix, n
    return lay


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts.pop()
        yield ".".join(parts), path, is_pkg


MODULES = {name: (path, is_pkg) for name, path, is_pkg in _modules()}


# C extensions built in place from ruda/<name>.c: imported as modules, not parsed
EXTENSIONS = {f"ruda.{path.stem}" for path in ROOT.glob("*.c")}


def _is_module(name):
    return name in MODULES or name in EXTENSIONS


def _imports(name, path, is_pkg):
    """(line, imported module) for every import in the file, relative ones resolved."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if is_pkg else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("ruda", *DEVICE_LIBS):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            if mod.split(".")[0] in DEVICE_LIBS:
                yield node.lineno, mod
                continue
            if mod.split(".")[0] != "ruda":
                continue
            for alias in node.names:
                sub = f"{mod}.{alias.name}"
                # ``from pkg import sub`` imports the submodule; ``from mod import name`` the module
                yield node.lineno, sub if _is_module(sub) else mod


def _private_members(path):
    """(line, ".attr") for layer-5 attribute access of an array's private members."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ARRAY_PRIVATE:
            # an object's own attributes (``self._data``) are its business
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            yield node.lineno, "." + node.attr


def _is_private(mod):
    return any(part.startswith("_") and part != "__main__" for part in mod.split(".")[1:])


def _violations():
    found = []          # (importer, target, "file:line: message")
    graph = {}          # module -> {module of the same package it imports: line}
    for name, (path, is_pkg) in MODULES.items():
        src = layer(name)
        rel = path.relative_to(ROOT.parent)
        for line, target in sorted(set(_imports(name, path, is_pkg))):
            if target.split(".")[0] in DEVICE_LIBS:
                if src == 1:
                    found.append((name, target, f"{rel}:{line}: {name} (layer 1) imports the "
                                  f"device library {target}: ask the backend instead"))
                continue
            dst = layer(target)
            where = f"{rel}:{line}: {name} (layer {src}) -> {target} (layer {dst})"
            if dst is None:
                found.append((name, target, where + ": not in the layer map"))
            elif dst > src:
                found.append((name, target, where + ": imports a higher layer"))
            elif src == 5 and dst in (3, 4) and _is_private(target):
                found.append((name, target, where + ": layer 5 reaches a private module"))
            own_pkg = name if is_pkg else name.rpartition(".")[0]
            if (target != name and _is_module(target)
                    and target.rpartition(".")[0] == own_pkg and not is_pkg):
                graph.setdefault(name, {}).setdefault(target, line)
        if src == 5:
            for line, attr in sorted(set(_private_members(path))):
                found.append((name, attr, f"{rel}:{line}: {name} (layer 5) uses an array's "
                              f"private member {attr}"))
    for a, targets in graph.items():
        for b, line in targets.items():
            if a < b and a in graph.get(b, {}):
                where = (f"{MODULES[a][0].relative_to(ROOT.parent)}:{line} and "
                         f"{MODULES[b][0].relative_to(ROOT.parent)}:{graph[b][a]}")
                found.append((a, b, f"{where}: import cycle {a} <-> {b}"))
    return found


def test_layer_map_covers_every_module():
    missing = [name for name in MODULES if layer(name) is None]
    assert not missing, f"modules outside the layer map in {__file__}: {missing}"


def test_no_module_imports_above_its_layer():
    found = _violations()
    bad = [msg for imp, tgt, msg in found if (imp, tgt) not in ALLOWED]
    assert not bad, "layering violations:\n" + "\n".join(bad)


def test_allow_list_is_current():
    found = {(imp, tgt) for imp, tgt, _ in _violations()}
    stale = sorted(set(ALLOWED) - found)
    assert not stale, f"allow-list entries that no longer match a violation: {stale}"


@pytest.mark.parametrize("source, expected", [
    ("import ruda\n", [(1, "ruda")]),
    ("def f():\n    from ruda._array import Array\n", [(2, "ruda._array")]),
    ("from .. import _dtypes, nothing\n", [(1, "ruda._dtypes"), (1, "ruda")]),
    ("from . import cache\n", [(1, "ruda.runtime.cache")]),
    ("import numpy\nfrom os import path\n", []),
    ("import cupy.cuda\nfrom wgpu import gpu\n", [(1, "cupy.cuda"), (2, "wgpu")]),
])
def test_imports_are_resolved(tmp_path, source, expected):
    # the parser sees lazy imports and resolves relative ones against the module's package
    path = tmp_path / "m.py"
    path.write_text(source)
    got = list(_imports("ruda.runtime.m", path, False))
    assert got == expected
