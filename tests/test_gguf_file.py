"""ruda's GGUF header reader against the gguf package's own GGUFReader on a file written by the
gguf package's GGUFWriter: every metadata value type, arrays of numbers and of strings, float,
int and block-quantized tensors; and its errors on damaged files."""
import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
from ruda.nn.models._gguf_file import GGUFFile  # noqa: E402


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    rng = np.random.default_rng(5)
    p = str(tmp_path_factory.mktemp("gguf") / "t.gguf")
    w = gguf.GGUFWriter(p, "llama")
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4_000_000_000)
    w.add_int32("t.i32", -2_000_000_000)
    w.add_float32("t.f32", 0.1)
    w.add_uint64("t.u64", 2**63 + 5)
    w.add_int64("t.i64", -(2**62))
    w.add_float64("t.f64", 1e-300)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo ∑ wörld")
    w.add_array("t.ints", [int(v) for v in rng.integers(-5, 5, 100)])
    w.add_array("t.floats", [float(v) for v in rng.standard_normal(7)])
    w.add_array("t.strs", ["a", "", "ü ∂", "merge me"] * 50)
    w.add_tensor("f32", rng.standard_normal((3, 5)).astype(np.float32))
    w.add_tensor("f16", rng.standard_normal((2, 7)).astype(np.float16))
    w.add_tensor("i32", rng.integers(-9, 9, (4,)).astype(np.int32))
    q = gguf.quants.quantize(rng.standard_normal((4, 64)).astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("q8", q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return p


def test_same_fields_and_tensors_as_the_gguf_package(path):
    ours, ref = GGUFFile(path), gguf.GGUFReader(path)
    keys = [k for k in ref.fields if not k.startswith("GGUF.")]
    assert list(ours.fields) == keys
    for k in keys:
        want = ref.fields[k].contents()
        assert ours.fields[k] == want and type(ours.fields[k]) is type(want), k
    assert ours.fields["t.str"] == "héllo ∑ wörld" and ours.fields["t.u64"] == 2**63 + 5
    assert [t.name for t in ours.tensors] == [t.name for t in ref.tensors]
    for a, b in zip(ours.tensors, ref.tensors):
        assert a.shape == tuple(b.shape.tolist()) and a.tensor_type == b.tensor_type, a.name
        assert a.data.dtype == b.data.dtype and a.data.shape == b.data.shape, a.name
        np.testing.assert_array_equal(a.data, b.data)


def test_damaged_files_are_errors(path, tmp_path):
    raw = open(path, "rb").read()
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUX" + raw[4:])
    with pytest.raises(ValueError, match="not a GGUF file"):
        GGUFFile(str(bad))
    bad.write_bytes(raw[:4] + (7).to_bytes(4, "little") + raw[8:])
    with pytest.raises(ValueError, match="GGUF version 7"):
        GGUFFile(str(bad))
    bad.write_bytes(raw[:-40])                      # the last tensor's data cut short
    with pytest.raises(ValueError, match="runs past the end of the file"):
        GGUFFile(str(bad))


def test_load_names_a_damaged_file(path, tmp_path):
    import ruda.nn.models
    raw = open(path, "rb").read()
    for name, data in (("magic.gguf", b"GGUX" + raw[4:]), ("short.gguf", raw[:30])):
        bad = tmp_path / name
        bad.write_bytes(data)
        with pytest.raises(ValueError, match=r"path: expected a readable GGUF file, got .*" + name):
            ruda.nn.models.load(str(bad))
