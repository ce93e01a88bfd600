"""ruda.nn.models._hf: config/JSON reading, safetensors loading (single file, sharded with an
index, bfloat16, dtype cast) on every device, tokenizer loading, shape checks and errors."""
import json

import numpy as np
import pytest

import ruda as xp

pytest.importorskip("safetensors")
from safetensors.numpy import save_file  # noqa: E402

from ruda.nn.models import _hf  # noqa: E402


def _host(a):
    return np.asarray(a.to_device("cpu"))


def _weights(rng):
    return {"a.weight": rng.standard_normal((4, 6)).astype(np.float32),
            "a.bias": rng.standard_normal(4).astype(np.float32),
            "ids": np.arange(5, dtype=np.int32)}


def test_single_file(tmp_path, device):
    rng = np.random.default_rng(1)
    w = _weights(rng)
    save_file(w, str(tmp_path / "model.safetensors"))
    got = _hf.load_safetensors(tmp_path, device)
    assert set(got) == set(w)
    for k, v in w.items():
        assert got[k].device == device
        assert got[k].dtype == xp.asarray(v).dtype
        np.testing.assert_array_equal(_host(got[k]), v)


def test_sharded_with_index(tmp_path, device):
    rng = np.random.default_rng(2)
    w = _weights(rng)
    save_file({"a.weight": w["a.weight"]}, str(tmp_path / "model-00001-of-00002.safetensors"))
    save_file({"a.bias": w["a.bias"], "ids": w["ids"]},
              str(tmp_path / "model-00002-of-00002.safetensors"))
    index = {"metadata": {}, "weight_map": {"a.weight": "model-00001-of-00002.safetensors",
                                            "a.bias": "model-00002-of-00002.safetensors",
                                            "ids": "model-00002-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    got = _hf.load_safetensors(tmp_path, device)
    assert set(got) == set(w)
    for k, v in w.items():
        np.testing.assert_array_equal(_host(got[k]), v)


def test_bfloat16_and_cast(tmp_path, device):
    ml = pytest.importorskip("ml_dtypes")
    if getattr(xp, "bfloat16", None) is None:
        pytest.skip("ruda has no bfloat16 here")
    rng = np.random.default_rng(3)
    w32 = rng.standard_normal((3, 8)).astype(np.float32)
    w16 = w32.astype(ml.bfloat16)
    save_file({"w": w16, "ids": np.arange(3, dtype=np.int32)}, str(tmp_path / "model.safetensors"))
    got = _hf.load_safetensors(tmp_path, device)
    assert got["w"].dtype == xp.bfloat16
    np.testing.assert_array_equal(_host(xp.astype(got["w"], xp.float32)),
                                  w16.astype(np.float32))
    cast = _hf.load_safetensors(tmp_path, device, dtype=xp.float32)
    assert cast["w"].dtype == xp.float32 and cast["w"].device == device
    np.testing.assert_array_equal(_host(cast["w"]), w16.astype(np.float32))
    assert cast["ids"].dtype == xp.int32             # integer buffers keep their dtype


def test_cast_reaches_a_device_without_the_files_dtype(tmp_path, device):
    """dtype= casts floating tensors on the host: float64 (and float16) files load as float32
    on a device without float64 (a browser-class wgpu adapter), integer tensors as they are."""
    rng = np.random.default_rng(4)
    w = rng.standard_normal((3, 5))
    save_file({"w": w, "h": w.astype(np.float16), "ids": np.arange(3, dtype=np.int32)},
              str(tmp_path / "model.safetensors"))
    got = _hf.load_safetensors(tmp_path, device, dtype=xp.float32)
    for k, want in (("w", w.astype(np.float32)), ("h", w.astype(np.float16).astype(np.float32))):
        assert got[k].dtype == xp.float32 and got[k].device == device
        np.testing.assert_array_equal(_host(got[k]), want)
    assert got["ids"].dtype == xp.int32


def test_skip(tmp_path, device):
    rng = np.random.default_rng(4)
    w = rng.standard_normal((2, 3)).astype(np.float32)
    save_file({"emb.w": w, "emb.position_ids": np.arange(4, dtype=np.int64)[None]},
              str(tmp_path / "model.safetensors"))
    got = _hf.load_safetensors(tmp_path, device, skip=("position_ids",))
    assert list(got) == ["emb.w"]
    np.testing.assert_array_equal(_host(got["emb.w"]), w)


def test_json_and_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 8}))
    assert _hf.read_config(tmp_path) == {"model_type": "bert", "hidden_size": 8}
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    assert _hf.read_json(tmp_path, "1_Pooling/config.json") == {"pooling_mode_mean_tokens": True}
    assert _hf.read_json(tmp_path, "generation_config.json") is None
    (tmp_path / "modules.json").write_text('[{"path": "1_Pooling"}]')
    assert _hf.read_json(tmp_path, "modules.json", expect=list) == [{"path": "1_Pooling"}]
    with pytest.raises(ValueError, match="modules.json: expected a JSON object, got list"):
        _hf.read_json(tmp_path, "modules.json")
    with pytest.raises(ValueError, match="read_json.*generation_config.json"):
        _hf.read_json(tmp_path, "generation_config.json", required=True)


def test_config_errors(tmp_path):
    with pytest.raises(ValueError, match="read_config: path: expected a model directory"):
        _hf.read_config(tmp_path / "nope")
    with pytest.raises(ValueError, match="read_config.*config.json"):
        _hf.read_config(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="config.json: expected valid JSON"):
        _hf.read_config(tmp_path)
    (tmp_path / "config.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="config.json: expected a JSON object, got list"):
        _hf.read_config(tmp_path)


def test_load_errors(tmp_path):
    with pytest.raises(ValueError, match="load_safetensors: path: expected a directory holding"):
        _hf.load_safetensors(tmp_path, "cpu")
    (tmp_path / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="model.safetensors: expected a safetensors file"):
        _hf.load_safetensors(tmp_path, "cpu")
    with pytest.raises(TypeError, match="load_safetensors: dtype: expected a real floating"):
        _hf.load_safetensors(tmp_path, "cpu", dtype=xp.int32)
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"x": "model-00001-of-00001.safetensors"}}))
    with pytest.raises(ValueError, match="index.json: expected shards present.*missing"):
        _hf.load_safetensors(tmp_path, "cpu")
    save_file({"y": np.zeros(2, np.float32)}, str(tmp_path / "model-00001-of-00001.safetensors"))
    with pytest.raises(ValueError, match=r"expected every indexed tensor.*\['x'\]"):
        _hf.load_safetensors(tmp_path, "cpu")
    assert list(_hf.load_safetensors(tmp_path, "cpu", skip=("x",))) == ["y"]
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {}}))
    with pytest.raises(ValueError, match="expected a non-empty 'weight_map'"):
        _hf.load_safetensors(tmp_path, "cpu")


def test_load_arguments(tmp_path):
    """Wrong argument types are named with the function called, before any file is read."""
    from ruda.nn.models import bert, load
    from ruda.nn.models._gguf import load_gguf
    for bad in (5, None, b"m.gguf"):
        with pytest.raises(TypeError, match=rf"^ruda.nn.models.load: path: expected a str or "
                                            rf"os.PathLike .*, got {type(bad).__name__}$"):
            load(bad)
        with pytest.raises(TypeError, match=r"^ruda.nn.models.read_config: path: expected a "
                                            r"str or os.PathLike"):
            _hf.read_config(bad)
    with pytest.raises(TypeError, match=r"^ruda.nn.models.load_gguf: path: expected a str"):
        load_gguf(None)
    gguf = tmp_path / "m.gguf"
    for bad, got in ((xp.int32, "int32"), ("int8", "'int8'"), ("float33", "'float33'"),
                     (5, "5")):
        for fn, call in (("load", load), ("load_gguf", load_gguf), ("load", bert.load),
                         ("load_safetensors", _hf.load_safetensors)):
            with pytest.raises(TypeError, match=rf"^ruda.nn.models.{fn}: dtype: expected a real "
                                                rf"floating dtype .*, got {got}$"):
                call(tmp_path if call is not load_gguf else gguf, "cpu", dtype=bad)
    for bad in ("no", 0, None):
        with pytest.raises(TypeError, match=rf"load: quantized: expected a bool, got {bad!r}"):
            load(gguf, quantized=bad)
        with pytest.raises(TypeError, match=r"load_gguf: quantized: expected a bool"):
            load_gguf(gguf, quantized=bad)
    assert _hf.float_dtype("load", "bfloat16" if xp.bfloat16 else "float16") \
        == (xp.bfloat16 or xp.float16)
    assert _hf.float_dtype("load", None) is None and _hf.float_dtype("load", "float64") \
        == xp.float64


def test_tokenizer(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    with pytest.raises(ValueError, match="load_tokenizer: path: expected a directory holding"):
        _hf.load_tokenizer(tmp_path)
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0, "hi": 1, "there": 2},
                                                           unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    assert _hf.load_tokenizer(tmp_path).encode("hi there you").ids == [1, 2, 0]
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ValueError, match="tokenizer.json: expected a tokenizers JSON file"):
        _hf.load_tokenizer(tmp_path)


def test_expect_shape():
    a = xp.zeros((2, 3))
    assert _hf.expect_shape("w", a, (2, 3)) is a
    with pytest.raises(ValueError, match=r"'enc.w': expected shape \(3, 2\), got \(2, 3\)"):
        _hf.expect_shape("enc.w", a, (3, 2))
