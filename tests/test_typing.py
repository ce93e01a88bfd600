"""Every public function of the namespace is annotated, and its annotations resolve."""
import inspect
import types
import typing

import pytest

import ruda as xp


def _python(fn):
    """The Python function behind a namespace function (C Functions keep it as __wrapped__)."""
    return fn if isinstance(fn, types.FunctionType) else fn.__wrapped__


def _functions():
    for name in xp.__all__:
        obj = getattr(xp, name)
        if callable(obj) and not isinstance(obj, type | types.ModuleType):
            yield name, _python(obj)


@pytest.mark.parametrize("name, fn", list(_functions()), ids=lambda v: v if isinstance(v, str) else "")
def test_public_function_is_typed(name, fn):
    hints = typing.get_type_hints(fn)
    sig = inspect.signature(fn)
    missing = [p.name for p in sig.parameters.values() if p.name not in hints]
    assert not missing and "return" in hints, f"ruda.{name}: no annotation for {missing or 'return'}"


def test_hints_name_the_public_types():
    hints = lambda fn: typing.get_type_hints(_python(fn))  # noqa: E731
    assert hints(xp.take)["x"] is xp.Array
    assert hints(xp.device)["return"] is xp.Device
    assert xp.Array in typing.get_args(hints(xp.where)["x1"])
    assert hints(xp.unstack)["return"] == tuple[xp.Array, ...]
