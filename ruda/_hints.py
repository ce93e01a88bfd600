"""Hints for NumPy, CuPy and PyTorch spellings, on the error path only.

A keyword a namespace function does not take (``std(x, ddof=1)``) raises a TypeError naming the
function, the keyword and the standard's spelling (``correction``); a missing module attribute
(``ruda.concatenate``) raises an AttributeError naming the standard's function (``ruda.concat``).

Keyword hints cost nothing on a call that binds: with the C accelerator each function is a
``ruda._speedups.Function`` (as the fast-path functions already are) whose call hands a
TypeError raised while the arguments bound (the function never ran) to :func:`keyword_error`;
without it a Python wrapper does the same in an ``except`` clause.

It knows nothing of arrays (layer 1): the namespace and ``ruda.nn`` install it on their functions.
"""
import functools
import itertools
import sys
import types

from ruda.runtime.accelerator import speedups as _speedups

# A keyword from NumPy/CuPy/PyTorch -> (the standard's keywords it may mean, tried in order on
# the function's own parameters; a note when none of them fits or to say how values map)
KEYWORDS = {
    "ddof": (("correction",), "correction=1 is NumPy's ddof=1"),
    "unbiased": (("correction",), "correction=1 is unbiased=True"),
    "keepdim": (("keepdims",), None),
    "dim": (("axis", "axes"), None),
    "dims": (("axes", "axis"), None),
    "axes": (("axis",), None),
    "axis": (("axes",), None),
    "newshape": (("shape",), None),
    "kind": (("stable",), "stable=True asks for a stable sort"),
    "reverse": (("descending",), None),
    "shifts": (("shift",), None),
    "reps": (("repetitions",), None),
    "rcond": (("rtol",), None),
    "tol": ((), "NumPy's tol is an absolute cut-off; the array API's rtol is relative to the "
                "largest singular value: rtol = tol / max(ruda.linalg.svdvals(x))"),
    "a_min": (("min",), None),
    "a_max": (("max",), None),
    "retstep": ((), "the step is (stop - start) / (num - 1) with endpoint=True"),
    "out": ((), "ruda functions return a new array (there is no out=); assign into an "
                "array with x[...] = result"),
    "order": ((), "ruda arrays have no memory order argument"),
    "dtype": ((), "cast first with ruda.astype(x, dtype)"),
    "device": ((), "move arrays explicitly with x.to_device(device)"),
    "like": (("device",), "device=x.device puts the result on x's device"),
    "where": ((), "mask first, e.g. ruda.where(mask, x, 0)"),
    "initial": ((), "combine the result with the initial value after the call"),
    "decimals": ((), "ruda.round rounds to integers; scale first: ruda.round(x * 10**d) / 10**d"),
    "return_counts": ((), "ruda.unique_counts(x) gives values and counts"),
    "return_inverse": ((), "ruda.unique_inverse(x) gives values and inverse indices"),
    "return_index": ((), "ruda.unique_all(x) gives values, indices, inverse indices and counts"),
    "compute_uv": ((), "ruda.linalg.svdvals(x) gives the singular values alone"),
    "axis1": ((), "ruda.linalg.diagonal and ruda.linalg.trace use the last two axes; "
                  "move yours there with ruda.moveaxis or ruda.permute_dims"),
    "axis2": ((), "ruda.linalg.diagonal and ruda.linalg.trace use the last two axes; "
                  "move yours there with ruda.moveaxis or ruda.permute_dims"),
    "size": (("shape",), None),
    "inplace": ((), "ruda.nn functions return a new array: assign it, x = f(x)"),
    "largest": ((), "ruda.nn.top_k returns the largest; for the smallest negate: top_k(-x, k)"),
}
for _k in ("a", "arr", "ary", "array", "input", "m"):   # NumPy's and PyTorch's array keywords
    KEYWORDS[_k] = ((), "pass the array positionally")
del _k


def public_name(fn):
    """``ruda.sum``, ``ruda.linalg.inv``, ``ruda.nn.softmax``, ``ruda.random.normal``: where
    the namespace exposes fn (its module's path up to the first private part)."""
    parts = (getattr(fn, "__module__", None) or "ruda").split(".")
    public = list(itertools.takewhile(lambda p: not p.startswith("_"), parts))
    return f"{'.'.join(public) or 'ruda'}.{fn.__name__}"


def keyword_error(fn, kwnames, exc):
    """The TypeError to raise instead of ``exc``, raised while ``fn``'s arguments (with keywords
    ``kwnames``) bound; None keeps ``exc``."""
    import inspect
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    name = public_name(fn)
    params = sig.parameters
    for k in kwnames:
        p = params.get(k)
        if p is None:
            why = f"unexpected keyword argument {k!r}{_spelling(k, params)}"
        elif p.kind is p.POSITIONAL_ONLY:
            why = f"{k} is positional-only: pass it without {k}="
        else:
            continue
        shown = list(params.values())[1 if "." in fn.__qualname__ else 0:]   # a method: no self
        plain = sig.replace(parameters=[q.replace(annotation=q.empty) for q in shown],
                            return_annotation=sig.empty)   # the parameters, not their types
        return TypeError(f"{name}: {why}{' ' if why.endswith('?') else '. '}It takes {name}{plain}")
    text = str(exc)   # e.g. "got multiple values for argument 'shape'": say whose
    head = f"{fn.__name__}() "
    return TypeError(f"{name}: {text[len(head):] if text.startswith(head) else text}")


def _spelling(k, params):
    """'; the array API spells it ...' for keyword k, or a close parameter name, or ''."""
    names, note = KEYWORDS.get(k, ((), None))
    for n in names:
        if n in params and params[n].kind is not params[n].POSITIONAL_ONLY:
            return f"; the array API spells it {n}=" + (f" ({note})" if note else "")
    if note:
        return f"; {note}"
    import difflib
    keywords = [p for p in params if params[p].kind is not params[p].POSITIONAL_ONLY]
    close = difflib.get_close_matches(k, keywords, n=1, cutoff=0.7)
    return f"; did you mean {close[0]}=?" if close else ""


def _python_wrapper(fn):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            # no frame of fn in the traceback: its arguments did not bind
            if kwargs and e.__traceback__.tb_next is None:
                hint = keyword_error(fn, tuple(kwargs), e)
                if hint is not None:
                    raise hint from None
            raise
    return call


_C = _speedups is not None and hasattr(_speedups, "hints")
if _C:
    _speedups.hints(keyword_error)   # every _speedups.Function's Python call reports here


def install(namespace, names):
    """Give the functions ``names`` of a module's ``namespace`` (its globals()) keyword hints.

    Functions that already are ``_speedups.Function`` objects have them through the hook."""
    for n in names:
        fn = namespace[n]
        if fn.__class__ is types.FunctionType:
            fn = namespace[n] = _hinted(fn)
        if fn.__class__ is not types.FunctionType:
            pickled_by_name(fn)


def install_methods(cls, names):
    """Keyword hints for the methods ``names`` of class ``cls``."""
    for n in names:
        fn = _hinted(cls.__dict__[n])
        setattr(cls, n, fn)
        pickled_by_name(fn)


def install_public(module_all, namespace):
    """Keyword hints for the public functions of a package (``namespace``, its globals()),
    each installed in the module that defines it, so that pickle finds the same object."""
    for n in module_all:
        fn = namespace[n]
        if fn.__class__ is types.FunctionType:
            home = vars(sys.modules[fn.__module__])
            install(home, (fn.__name__,))
            namespace[n] = home[fn.__name__]


class _Missing:
    """A class attribute that is not there: looking it up raises the AttributeError Python would,
    with a hint (``x.numpy()``: how ruda spells it). Lookups of attributes that exist pay
    nothing, as they would for a ``__getattr__`` hook."""
    __slots__ = ("name", "hint")

    def __init__(self, name, hint):
        self.name, self.hint = name, hint

    def __get__(self, obj, owner=None):
        raise AttributeError(f"{(owner or type(obj)).__name__!r} object has no attribute "
                             f"{self.name!r}; {self.hint}", name=self.name, obj=obj)


def install_missing(cls, notes):
    """Hints for the attributes (name -> note) that ``cls`` does not have; dir() leaves them out."""
    for name, hint in notes.items():
        if name in vars(cls):
            raise RuntimeError(f"{cls.__name__}.{name} exists: it needs no hint")
        setattr(cls, name, _Missing(name, hint))
    hidden, listed = frozenset(notes), cls.__dir__

    def __dir__(self):
        return [n for n in listed(self) if n not in hidden]
    cls.__dir__ = __dir__


def _hinted(fn):
    return _speedups.function("plain", fn, None) if _C else _python_wrapper(fn)


def pickled_by_name(f):
    """pickle and copy take a ``_speedups.Function`` by its module and name, as a function."""
    name = f.__qualname__
    f.__reduce_ex__ = lambda protocol: name


# Module attributes: NumPy/CuPy/PyTorch names -> the standard's name in the same module
RENAMED = {
    "ruda": {
        "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin",
        "arcsinh": "asinh", "arctan": "atan", "arctan2": "atan2", "arctanh": "atanh",
        "power": "pow", "left_shift": "bitwise_left_shift", "right_shift": "bitwise_right_shift",
        "invert": "bitwise_invert", "bitwise_not": "bitwise_invert", "concatenate": "concat",
        "cat": "concat", "amax": "max", "amin": "min", "true_divide": "divide",
        "mod": "remainder", "conjugate": "conj", "around": "round", "rint": "round", "fix": "trunc",
        "cumsum": "cumulative_sum", "cumprod": "cumulative_prod", "unsqueeze": "expand_dims",
        "clamp": "clip", "permute": "permute_dims", "rollaxis": "moveaxis", "array": "asarray",
        "tensor": "asarray", "from_numpy": "asarray", "identity": "eye", "in1d": "isin",
        "bool_": "bool", "ndarray": "Array", "average": "mean", "argwhere": "nonzero",
        "Inf": "inf", "NaN": "nan", "NAN": "nan", "PINF": "inf", "float_": "float64",
        "int_": "int64", "cfloat": "complex128", "double": "float64", "single": "float32",
        "half": "float16", "asanyarray": "asarray", "ascontiguousarray": "asarray",
    },
    "ruda.linalg": {"multi_dot": "matmul"},
    "ruda.fft": {},
    "ruda.random": {},
}
NOTES = {
    "ruda": {
        "transpose": "the array API spells it ruda.permute_dims(x, axes); ruda.matrix_transpose(x) "
                     "(or x.mT) swaps the last two axes and x.T reverses a 2-D array",
        "swapaxes": "use ruda.permute_dims(x, axes) or ruda.moveaxis(x, source, destination)",
        "ravel": "use ruda.reshape(x, (-1,))",
        "flatten": "use ruda.reshape(x, (-1,))",
        "asnumpy": "copy to the host with x.to_device('cpu'), then numpy.asarray(...)",
        "copy": "use ruda.asarray(x, copy=True)",
        "dot": "use ruda.matmul, ruda.vecdot or ruda.tensordot",
        "inner": "use ruda.vecdot",
        "outer": "the array API spells it ruda.linalg.outer",
        "diag": "use ruda.linalg.diagonal(x) to read a diagonal",
        "norm": "use ruda.linalg.vector_norm or ruda.linalg.matrix_norm",
        "unique": "use ruda.unique_values (or unique_all, unique_counts, unique_inverse)",
        "hstack": "use ruda.concat(arrays, axis=...) or ruda.stack",
        "vstack": "use ruda.concat(arrays, axis=...) or ruda.stack",
        "column_stack": "use ruda.stack(arrays, axis=1)",
        "append": "use ruda.concat",
        "split": "slice the array, or ruda.unstack(x, axis=...) for single entries",
        "array_split": "slice the array, or ruda.unstack(x, axis=...) for single entries",
        "isclose": "not in the array API: ruda.abs(a - b) <= atol + rtol * ruda.abs(b)",
        "allclose": "not in the array API: ruda.all(ruda.abs(a - b) <= atol + rtol * ruda.abs(b))",
        "array_equal": "use ruda.all(a == b) (shapes equal)",
        "fmod": "ruda.remainder is Python's % (the result takes the divisor's sign); fmod's "
                "(the dividend's sign) is not in the array API",
        "logspace": "use ruda.pow(10.0, ruda.linspace(start, stop, num))",
        "dtype": "dtypes are ruda attributes: ruda.float32, ruda.int64, ...",
        "shape": "use x.shape",
        "ndim": "use x.ndim",
        "size": "use x.size",
        "einsum": "not in the array API: use ruda.matmul, ruda.vecdot or ruda.tensordot",
        "numel": "use x.size",
        "nansum": "not in the array API: ruda.sum(ruda.where(ruda.isnan(x), 0.0, x))",
        "nanmean": "not in the array API: with m = ruda.isnan(x), "
                   "ruda.sum(ruda.where(m, 0.0, x)) / ruda.sum(~m)",
        "nanmax": "not in the array API: ruda.max(ruda.where(ruda.isnan(x), -ruda.inf, x))",
        "nanmin": "not in the array API: ruda.min(ruda.where(ruda.isnan(x), ruda.inf, x))",
        "median": "not in the array API: ruda.sort(x, axis=...) and the middle entries",
        "percentile": "not in the array API: ruda.sort(x, axis=...) and the entries at the ranks",
        "quantile": "not in the array API: ruda.sort(x, axis=...) and the entries at the ranks",
        "ptp": "not in the array API: ruda.max(x, axis=...) - ruda.min(x, axis=...)",
        "degrees": "not in the array API: x * (180 / ruda.pi)",
        "rad2deg": "not in the array API: x * (180 / ruda.pi)",
        "radians": "not in the array API: x * (ruda.pi / 180)",
        "deg2rad": "not in the array API: x * (ruda.pi / 180)",
        "exp2": "not in the array API: ruda.pow(2.0, x)",
        "atleast_1d": "use ruda.reshape(x, (-1,)) or ruda.expand_dims",
        "atleast_2d": "use ruda.expand_dims(x, axis=0) (or ruda.reshape)",
        "argpartition": "use ruda.nn.top_k(x, k) (sorted) or ruda.argsort",
        "partition": "use ruda.nn.top_k(x, k) (sorted) or ruda.sort",
    },
    "ruda.linalg": {
        "norm": "use ruda.linalg.vector_norm or ruda.linalg.matrix_norm",
        "lstsq": "not in the array API: ruda.linalg.solve for square systems, else "
                 "ruda.linalg.pinv(a) @ b",
    },
    "ruda.random": {
        n: f"draw from a generator: g = ruda.random.default_rng(seed), then {call}"
        for names, call in ((("rand", "random", "random_sample", "sample"), "g.random(shape)"),
                            (("randn", "standard_normal", "normal"), "g.normal(shape=shape)"),
                            (("randint", "integers"), "g.integers(low, high, shape)"),
                            (("uniform",), "g.uniform(low, high, shape)"),
                            (("permutation", "shuffle"), "g.permutation(x)"),
                            (("choice",), "g.integers(0, n, shape) (with replacement) or "
                                          "g.permutation(n)[:k] (without)"),
                            (("seed", "RandomState", "manual_seed"), "g.random(...), g.normal(...)"))
        for n in names},
    "ruda.fft": {
        "fft2": "use ruda.fft.fftn(x, axes=(-2, -1))",
        "ifft2": "use ruda.fft.ifftn(x, axes=(-2, -1))",
        "rfft2": "use ruda.fft.rfftn(x, axes=(-2, -1))",
        "irfft2": "use ruda.fft.irfftn(x, axes=(-2, -1))",
    },
}
# subpackages imported on request, not by ``import ruda``
_SUBPACKAGES = ("nn", "data", "distributed", "bench")


def module_getattr(modname):
    """A module ``__getattr__`` (called only for a missing attribute) whose AttributeError says
    how the array API spells a NumPy/CuPy/PyTorch name."""
    renamed, notes = RENAMED[modname], NOTES[modname]

    def __getattr__(name):
        hint = _attribute_hint(modname, name, renamed, notes)
        if hint is None:   # Python's traceback adds "Did you mean" from name and obj
            raise AttributeError(f"module {modname!r} has no attribute {name!r}", name=name,
                                 obj=sys.modules[modname])
        raise AttributeError(f"module {modname!r} has no attribute {name!r}; {hint}")
    return __getattr__


def _attribute_hint(modname, name, renamed, notes):
    if name in renamed:
        return f"the array API spells it {modname}.{renamed[name]}"
    if name in notes:
        return notes[name]
    if modname == "ruda":
        if name in _SUBPACKAGES:
            return f"import ruda.{name} first"
        for sub in ("linalg", "fft"):
            if name in sys.modules[f"ruda.{sub}"].__all__:
                return f"it is ruda.{sub}.{name}"
    return None
