"""Reading a Hugging Face model directory: config.json and other JSON files, safetensors
weights (single file or shards listed in an index) and tokenizer.json.

Weights are read memory-mapped through ``safetensors.safe_open(..., framework="numpy")``
(bfloat16 through ml_dtypes) and each tensor goes to the device straight from that view."""
import json
import os

import ruda as xp

_SINGLE = "model.safetensors"
_INDEX = "model.safetensors.index.json"



def _floating(dt):
    """A NumPy dtype that is a real floating one (bfloat16's NumPy kind is "V")."""
    return dt.kind == "f" or dt.name == "bfloat16"

def _err(cls, fn, arg, expected, got):
    return cls(f"ruda.nn.models.{fn}: {arg}: expected {expected}, got {got}")


def fspath(fn, path, what="a model directory"):
    """``path`` (a str or os.PathLike) as a str, else a TypeError naming ``fn``."""
    p = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if not isinstance(p, str):
        raise _err(TypeError, fn, "path", f"a str or os.PathLike ({what})",
                   type(path).__name__)
    return p


def float_dtype(fn, dtype):
    """None, or ``dtype`` (a real floating ruda dtype or its name) as a ruda dtype, else a
    TypeError naming ``fn``."""
    if dtype is None:
        return None
    try:
        ok = xp.isdtype(dtype, "real floating")
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise _err(TypeError, fn, "dtype", "a real floating dtype (float32, float16, bfloat16, "
                   "float64) or None", repr(dtype) if isinstance(dtype, str) else dtype)
    return xp.finfo(dtype).dtype


def boolean(fn, arg, v):
    """``v`` if it is a bool, else a TypeError naming ``fn`` and ``arg``."""
    if not isinstance(v, bool):
        raise _err(TypeError, fn, arg, "a bool", repr(v))
    return v


def _dir(fn, path):
    p = fspath(fn, path)
    if not os.path.isdir(p):
        raise _err(ValueError, fn, "path", "a model directory", repr(p))
    return p


def _json_file(fn, file, expect=dict):
    try:
        with open(file, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise _err(ValueError, fn, file, "valid JSON", f"a parse error: {e}") from None
    if not isinstance(data, expect):
        raise _err(ValueError, fn, file, "a JSON object" if expect is dict else "a JSON array",
                   type(data).__name__)
    return data


def read_json(path, name, required=False, expect=dict):
    """The JSON object in ``path/name`` (e.g. ``tokenizer_config.json``,
    ``1_Pooling/config.json``); None when the file is absent and not ``required``.
    ``expect=list`` reads a JSON array instead (sentence-transformers' modules.json)."""
    p = _dir("read_json", path)
    file = os.path.join(p, name)
    if not os.path.isfile(file):
        if required:
            raise _err(ValueError, "read_json", "path", f"a directory holding {name}", repr(p))
        return None
    return _json_file("read_json", file, expect)


def read_config(path):
    """``config.json`` of the model directory ``path`` as a dict."""
    p = _dir("read_config", path)
    file = os.path.join(p, "config.json")
    if not os.path.isfile(file):
        raise _err(ValueError, "read_config", "path", "a directory holding config.json",
                   f"{p!r} without it")
    return _json_file("read_config", file)


def _shards(p):
    index = os.path.join(p, _INDEX)
    if os.path.isfile(index):
        data = _json_file("load_safetensors", index)
        wm = data.get("weight_map")
        if not isinstance(wm, dict) or not wm:
            raise _err(ValueError, "load_safetensors", index,
                       "a non-empty 'weight_map' object", repr(wm)[:80])
        files = list(dict.fromkeys(wm.values()))
        for f in files:
            if not os.path.isfile(os.path.join(p, f)):
                raise _err(ValueError, "load_safetensors", index,
                           "shards present in the directory", f"missing {f!r}")
        return files, set(wm)
    if os.path.isfile(os.path.join(p, _SINGLE)):
        return [_SINGLE], None
    raise _err(ValueError, "load_safetensors", "path",
               f"a directory holding {_SINGLE} or {_INDEX}", repr(p))


def load_safetensors(path, device, dtype=None, *, skip=()):
    """Every tensor of the model directory ``path`` as a ruda array on ``device`` (cast to
    ``dtype`` when given, floating tensors only: integer buffers keep their dtype). Tensors
    whose names end with one of the suffixes in ``skip`` are not read (buffers a model
    recomputes, such as BERT's int64 ``position_ids``, which some devices cannot hold)."""
    from safetensors import safe_open
    from tqdm import tqdm

    p = _dir("load_safetensors", path)
    dtype = float_dtype("load_safetensors", dtype)
    skip = tuple(skip)
    files, names = _shards(p)
    out = {}
    # the bar shows itself only when loading lasts over a second
    total = sum(os.path.getsize(os.path.join(p, f)) for f in files)
    with tqdm(total=total, desc="loading", unit="B", unit_scale=True, delay=1.0) as bar:
        for f in files:
            try:
                handle = safe_open(os.path.join(p, f), framework="numpy")
            except Exception as e:
                raise _err(ValueError, "load_safetensors", os.path.join(p, f),
                           "a safetensors file", f"{type(e).__name__}: {e}") from None
            with handle as st:
                for k in st.keys():
                    if skip and k.endswith(skip):
                        continue
                    t = st.get_tensor(k)
                    # a floating tensor is cast on the host, where the device may lack its dtype
                    cast = dtype if dtype is not None and _floating(t.dtype) else None
                    try:
                        out[k] = xp.asarray(t, dtype=cast, device=device)
                    except TypeError as e:
                        raise _err(TypeError, "load_safetensors", f"tensor {k!r}",
                                   "a dtype the device holds", f"{t.dtype} ({e})") from None
                    bar.update(t.nbytes)
    missing = sorted(n for n in names or () if n not in out and not (skip and n.endswith(skip)))
    if missing:
        raise _err(ValueError, "load_safetensors", os.path.join(p, _INDEX),
                   "every indexed tensor in its shard", f"missing {missing[:5]}")
    return out


def _text(fn, file):
    try:
        with open(file, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError as e:
        raise _err(ValueError, fn, file, "UTF-8 text", f"{e}") from None


def read_chat_template(path, config_template=None):
    """The chat template of the model directory ``path`` as transformers' tokenizer reads it:
    ``chat_template.jinja`` (the default one) and ``additional_chat_templates/*.jinja`` (named)
    take priority over ``config_template`` (tokenizer_config.json's ``chat_template``); failing
    those, the ``chat_template`` of a processor's legacy ``chat_template.json``. A str, named
    templates ({name: template} or tokenizer_config.json's [{name, template}]), or None."""
    fn = "read_chat_template"
    p = _dir(fn, path)
    named = {}
    extra = os.path.join(p, "additional_chat_templates")
    if os.path.isdir(extra):
        for f in sorted(os.listdir(extra)):
            if f.endswith(".jinja"):
                named[f.removesuffix(".jinja")] = _text(fn, os.path.join(extra, f))
    if os.path.isfile(os.path.join(p, "chat_template.jinja")):
        named["default"] = _text(fn, os.path.join(p, "chat_template.jinja"))
    if named:
        return named["default"] if list(named) == ["default"] else named
    if config_template:
        return config_template
    legacy = os.path.join(p, "chat_template.json")
    return _json_file(fn, legacy).get("chat_template") if os.path.isfile(legacy) else None


def load_tokenizer(path):
    """The ``tokenizers.Tokenizer`` of ``path/tokenizer.json``."""
    from tokenizers import Tokenizer
    p = _dir("load_tokenizer", path)
    file = os.path.join(p, "tokenizer.json")
    if not os.path.isfile(file):
        raise _err(ValueError, "load_tokenizer", "path", "a directory holding tokenizer.json",
                   repr(p))
    try:
        return Tokenizer.from_file(file)
    except Exception as e:
        raise _err(ValueError, "load_tokenizer", file, "a tokenizers JSON file",
                   f"{type(e).__name__}: {e}") from None


def expect_shape(name, array, shape):
    """``array.shape == shape`` or a ValueError naming the tensor."""
    got = tuple(array.shape)
    if got != tuple(shape):
        raise ValueError(f"ruda.nn.models: weight {name!r}: expected shape {tuple(shape)}, "
                         f"got {got}")
    return array
