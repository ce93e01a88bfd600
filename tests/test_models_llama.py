"""ruda.nn.models decoders vs transformers on tiny random checkpoints (Llama 3 with rope
scaling, Mistral with a sliding window shorter than the prompt, Qwen2, Qwen3): logits and greedy
tokens; generation options; loading errors; the CLI."""
import json
import os
import string
import warnings

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

import ruda as xp                                                        # noqa: E402
import ruda.nn as nn                                                     # noqa: E402
from ruda.nn.models import load                                          # noqa: E402
from ruda.nn.models._generate import repetition_penalty                  # noqa: E402

from conftest import to_numpy                                            # noqa: E402

CHARS = string.printable[:-6] + " \n"             # letters, digits, punctuation, space, newline
CHAT = ("{% for m in messages %}{{ bos_token if loop.first }}<|{{ m['role'] }}|>"
        "{{ m['content'] | trim }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>"
        "{% endif %}")
SMALL = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, bos_token_id=1, eos_token_id=2,
             initializer_range=0.3)
CONFIGS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM",
              dict(rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 8},
                   rope_theta=500000.0)),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(sliding_window=5)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(tie_word_embeddings=True)),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(head_dim=16)),
}


def _tokenizer():
    """A character-level BPE tokenizer: <unk>, <s>, </s>, then CHARS; BOS added."""
    from tokenizers import decoders, models, processors
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab.update({c: i + 3 for i, c in enumerate(CHARS)})
    tok = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    tok.decoder = decoders.Fuse()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return tok


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """{arch: (directory, transformers model)} for each tiny config."""
    out = {}
    for i, (arch, (cfg_name, cls_name, extra)) in enumerate(CONFIGS.items()):
        torch.manual_seed(i)
        cfg = getattr(transformers, cfg_name)(**SMALL, **extra)
        model = getattr(transformers, cls_name)(cfg).eval()
        with torch.no_grad():                   # biases and norm weights away from 0 and 1
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.1)
        d = tmp_path_factory.mktemp(arch)
        model.save_pretrained(d, safe_serialization=True)
        _tokenizer().save(str(d / "tokenizer.json"))
        (d / "tokenizer_config.json").write_text(json.dumps(
            {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>",
             "eos_token": "</s>", "unk_token": "<unk>", "chat_template": CHAT}))
        out[arch] = (d, model)
    return out


def _ref_greedy(model, ids, n):
    """transformers' greedy continuation, through its first end token."""
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), max_new_tokens=n, do_sample=False,
                             pad_token_id=0)[0, len(ids):].tolist()
    return out[:out.index(2) + 1] if 2 in out else out


PROMPTS = [[1, 40, 7, 99, 13, 5, 88, 23, 61, 17, 101, 3, 70, 44, 9], [1, 30, 64, 12, 95, 6, 7]]


@pytest.mark.parametrize("arch", list(CONFIGS))
def test_logits_and_greedy_match_transformers(checkpoints, device, arch):
    d, ref = checkpoints[arch]
    m = load(d, device=device)
    ids = PROMPTS[0]
    with torch.no_grad():
        want = ref(torch.tensor([ids])).logits.numpy()
    got = m.forward(xp.asarray([ids], dtype=xp.int32, device=device))
    assert got.dtype == xp.float32 and got.device == device
    np.testing.assert_allclose(to_numpy(got), want, rtol=1e-4, atol=1e-4)
    assert m.generate_ids([ids], max_new_tokens=8)[0] == _ref_greedy(ref, ids, 8)


@pytest.mark.parametrize("arch", list(CONFIGS))
def test_decode_step_matches_forward(checkpoints, device, arch):
    """``decode_step`` (position and tokens in device memory, attention over the whole cache
    with the later keys masked: what the cuda recording replays) gives forward's logits, for a
    batch of left-padded prompts (the padding mask) and through Mistral's sliding window."""
    m = load(checkpoints[arch][0], device=device)
    rng = np.random.default_rng(7)
    B, T, n, max_len = 2, 6, 5, 16
    ids = xp.asarray(rng.integers(3, 128, (B, T)), dtype=xp.int32, device=device)
    keep = np.ones((B, 1, 1, max_len), dtype=bool)
    keep[1, ..., :2] = False                             # row 1: two padding positions
    mask = xp.asarray(keep, device=device)
    ref, rec = m.new_cache(B, max_len), m.new_cache(B, max_len)
    m.forward(ids, ref, 0, mask[..., :T], last_only=True)
    m.forward(ids, rec, 0, mask[..., :T], last_only=True)
    for c in ref + rec:
        c.length = T
    pos = xp.zeros((1,), dtype=xp.int32, device=device)
    for t in range(T, T + n):
        tok = xp.asarray(rng.integers(3, 128, (B, 1)), dtype=xp.int32, device=device)
        want = m.forward(tok, ref, t, mask[..., :t + 1], last_only=True)
        pos[...] = xp.asarray([t], dtype=xp.int32, device=device)
        got = m.decode_step(tok, pos, rec, mask)
        assert got.shape == want.shape == (B, 1, 128) and got.dtype == want.dtype
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(to_numpy(rec[0].k[:, :, :T + n]), to_numpy(ref[0].k[:, :, :T + n]),
                               rtol=1e-5, atol=1e-6)


def test_recorded_decode_gives_the_same_tokens(checkpoints, monkeypatch):
    """Generation through a recorded decode step (what cuda replays as a CUDA graph) gives the
    tokens of the unrecorded path, single and batched (padding mask), and the recording is
    reused by the next generation of the same batch and length. The host stands in for the
    recording device: its replay runs the step again into the recorded output."""
    m = load(checkpoints["mistral"][0], device="cpu")
    want = [m.generate_ids([p], max_new_tokens=6)[0] for p in PROMPTS]
    want_batch = m.generate_ids(PROMPTS, max_new_tokens=6)
    calls = []

    def capture(self, fn):
        calls.append(fn)
        out = fn()

        def replay():
            new = fn()
            for o, n in zip(*((out, new) if isinstance(out, tuple) else ((out,), (new,)))):
                if o is not None:
                    o[...] = n
        return replay, out
    cls = type(m.device.backend)
    monkeypatch.setattr(cls, "records", True, raising=False)
    monkeypatch.setattr(cls, "capture", capture)
    assert [m.generate_ids([p], max_new_tokens=6)[0] for p in PROMPTS] == want
    assert m.generate_ids(PROMPTS, max_new_tokens=6) == want_batch
    assert len(calls) == 3          # the decode step, per (batch, cache length)
    for _ in range(2):              # the same shape again: the prompt's prefill is recorded too
        assert m.generate_ids(PROMPTS, max_new_tokens=6) == want_batch
    assert len(calls) == 4
    assert m.generate_ids(PROMPTS, max_new_tokens=6, temperature=0.5, seed=3) == \
        m.generate_ids(PROMPTS, max_new_tokens=6, temperature=0.5, seed=3)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("arch", ["mistral", "qwen3"])
def test_recorded_decode_on_the_device(checkpoints, device, arch, dtype, monkeypatch):
    """Where the device records (cuda: CUDA graphs; wgpu: its launches replayed), half-precision
    decoding is recorded without a warning and gives the tokens of the unrecorded run
    (``RUDA_RECORDING=0``)."""
    if not device.backend.records:
        pytest.skip(f"device '{device}' records no work")
    if not device.backend.supports(np.dtype(getattr(xp, dtype))):
        pytest.skip(f"device '{device}' has no {dtype}")
    m = load(checkpoints[arch][0], device=device, dtype=getattr(xp, dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = m.generate_ids(PROMPTS, max_new_tokens=8)
    assert m._recordings.step_rec.recorded                      # a recording, replayed
    for _ in range(2):                                          # the prefill recorded too
        assert m.generate_ids(PROMPTS, max_new_tokens=8) == got
    assert all(p and p[1].recorded for p in m._recordings.prefills.values())
    monkeypatch.setenv("RUDA_RECORDING", "0")
    m2 = load(checkpoints[arch][0], device=device, dtype=getattr(xp, dtype))
    assert m2.generate_ids(PROMPTS, max_new_tokens=8) == got
    assert getattr(m2, "_recordings", None) is None


def test_batch_of_prompts_of_different_lengths(checkpoints, device):
    d, ref = checkpoints["mistral"]
    m = load(d, device=device)
    single = [m.generate_ids([p], max_new_tokens=6)[0] for p in PROMPTS]
    assert single[1] == _ref_greedy(ref, PROMPTS[1], 6)
    assert m.generate_ids(PROMPTS, max_new_tokens=6) == single


# rope scaling entries as config files have them (the keys transformers fills in absent), on a
# model of 16 positions (max_position_embeddings); "top": config.json's top-level keys
ROPES = {
    "dynamic": dict(rope_scaling={"type": "dynamic", "factor": 2.0}),
    "dynamic_orig": dict(rope_scaling={"rope_type": "dynamic", "factor": 2.0,
                                       "original_max_position_embeddings": 8}),
    "dynamic_over_parameters": dict(rope_scaling={"type": "dynamic", "factor": 2.0},
                                    rope_parameters={"rope_type": "linear", "factor": 3.0,
                                                     "rope_theta": 7.0}),
    "linear": dict(rope_scaling={"type": "linear", "factor": 4.0}),
    "yarn": dict(rope_scaling={"rope_type": "yarn", "factor": 4.0}),
    "yarn_top_orig": dict(rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                        "original_max_position_embeddings": 16},
                          original_max_position_embeddings=4),
    "yarn_no_factor": dict(rope_scaling={"rope_type": "yarn", "factor": None,
                                         "original_max_position_embeddings": 8}),
    "llama3": dict(rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0}, rope_theta=500000.0),
}


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    """{name: directory} of tiny Llamas whose config.json holds ROPES[name] as written."""
    out = {}
    for i, (name, entries) in enumerate(ROPES.items()):
        torch.manual_seed(10 + i)
        cfg = transformers.LlamaConfig(**SMALL, head_dim=32, max_position_embeddings=16)
        d = tmp_path_factory.mktemp(name)
        transformers.LlamaForCausalLM(cfg).save_pretrained(d, safe_serialization=True)
        c = json.loads((d / "config.json").read_text())
        for k in ("rope_parameters", "rope_scaling", "rope_theta"):
            c.pop(k, None)
        (d / "config.json").write_text(json.dumps({**c, **entries}))
        out[name] = d
    return out


def _fresh(d):
    """transformers' model of ``d``, new: its dynamic NTK table keeps the longest length it
    has seen."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return transformers.LlamaForCausalLM.from_pretrained(d).eval()


LONG = [1, 40, 7, 99, 13, 5, 88, 23, 61, 17, 101, 3, 70, 44, 9, 30, 64, 12, 95, 6, 7, 51, 77, 19]


@pytest.mark.parametrize("name", list(ROPES))
def test_rope_scaling_as_transformers(scaled, device, name):
    """Each rope scaling read from config.json as transformers reads it (dynamic NTK from
    max_position_embeddings; llama3 and yarn without original_max_position_embeddings or with
    it at the top level; yarn without a factor; rope_scaling over rope_parameters): logits
    past the original length, and greedy decoding (dynamic NTK: each step's table)."""
    m = load(scaled[name], device=device)
    with torch.no_grad():
        want = _fresh(scaled[name])(torch.tensor([LONG])).logits.numpy()
    got = m.forward(xp.asarray([LONG], dtype=xp.int32, device=device))
    np.testing.assert_allclose(to_numpy(got), want, rtol=1e-4, atol=1e-4)
    assert m.generate_ids([LONG], max_new_tokens=6, max_len=30)[0] == \
        _ref_greedy(_fresh(scaled[name]), LONG, 6)


def test_rope_scaling_unsupported_at_load(scaled, tmp_path):
    src = scaled["linear"]
    cfg = json.loads((src / "config.json").read_text())
    for rope, msg in (({"rope_type": "longrope", "short_factor": [1.0] * 16,
                        "long_factor": [2.0] * 16}, r"'longrope'"),
                      ({"rope_type": "linear"}, r"'factor'")):
        d = _copy_dir(src, tmp_path / rope["rope_type"] / str(len(rope)),
                      config=json.dumps(dict(cfg, rope_scaling=rope)))
        with pytest.raises(ValueError, match=rf"load: config.json rope scaling: .*{msg}"):
            load(d, device="cpu")


def test_forward_start_is_the_cache_length(checkpoints, device):
    """``start`` with caches is their length (the default); another is an error, not logits
    of tokens rotated as if elsewhere."""
    m = load(checkpoints["qwen2"][0], device=device)
    tok = xp.asarray([PROMPTS[0]], dtype=xp.int32, device=device)
    full = to_numpy(m.forward(tok))
    c = m.new_cache(1, 32)
    m.forward(tok[:, :4], c)
    with pytest.raises(ValueError, match=r"Llama.forward: start: expected the caches' length 4 "
                                         r".*got 0"):
        m.forward(tok[:, 4:], c, 0)
    assert c[0].length == 4
    np.testing.assert_allclose(to_numpy(m.forward(tok[:, 4:9], c, 4)), full[:, 4:9],
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(to_numpy(m.forward(tok[:, 9:], c)), full[:, 9:],
                               rtol=1e-4, atol=1e-4)


def test_dynamic_ntk_batches(scaled, device):
    """Dynamic NTK past max_position_embeddings changes the rotary table with the length, so
    a left-padded row would not be the prompt alone: prompts of different lengths are an
    error there; of one length, or all within max_position_embeddings, each row is the
    prompt alone."""
    m = load(scaled["dynamic"], device=device)
    a, b = LONG[:5], LONG[:20]
    with pytest.raises(ValueError, match=r"prompts: expected prompts of one length .*dynamic "
                                         r"NTK.*max_position_embeddings=16.*lengths \[5, 20\]"):
        m.generate_ids([a, b], max_new_tokens=4)
    short = LONG[:10]
    with pytest.raises(ValueError, match=r"lengths \[5, 10\]"):   # the last step at 17
        m.generate_ids([a, short], max_new_tokens=8)
    assert m.generate_ids([a, short], max_new_tokens=7) == \
        [m.generate_ids([p], max_new_tokens=7)[0] for p in (a, short)]     # at 16 at most
    c = LONG[4:24]
    assert m.generate_ids([b, c], max_new_tokens=4) == \
        [m.generate_ids([p], max_new_tokens=4)[0] for p in (b, c)]


def test_generation_stops_at_the_context(scaled, device, monkeypatch):
    """The cache is at most the model's context (max_position_embeddings, or the length the
    rope scaling stretches it to), whatever max_new_tokens asks: generation stops there, as
    transformers' greedy tokens up to there; a longer prompt is an error; an explicit max_len
    runs past it."""
    m = load(scaled["linear"], device=device)     # 16 positions stretched 4 times: 64
    assert (m.cfg.max_positions, m.cfg.context) == (16, 64)
    lens = []
    new_cache = m.new_cache
    monkeypatch.setattr(m, "new_cache", lambda B, n: lens.append(n) or new_cache(B, n))
    got = m.generate_ids([LONG], max_new_tokens=10**9, stop_tokens=())[0]
    assert lens == [64] and len(got) == 64 - len(LONG) + 1
    ref = _fresh(scaled["linear"])
    ref.generation_config.eos_token_id = None                               # no end token
    with torch.no_grad():
        want = ref.generate(torch.tensor([LONG]), max_new_tokens=len(got), do_sample=False,
                            pad_token_id=0)[0, len(LONG):]
    assert got == want.tolist()
    with pytest.raises(ValueError, match=r"prompt: expected at most 64 tokens \(the model's "
                                         r"context.*max_len.*got 65 tokens"):
        m.generate_ids([(LONG * 3)[:65]], max_new_tokens=1)
    assert len(m.generate_ids([LONG], max_new_tokens=50, max_len=80, stop_tokens=())[0]) == 50
    assert lens[-1] == 80
    assert load(scaled["dynamic"], device="cpu").cfg.context == 32
    assert load(scaled["llama3"], device="cpu").cfg.context == 128


def test_cli_stops_at_the_context(scaled, tmp_path, capsys):
    from ruda.nn import generate as cli
    src = scaled["linear"]
    cfg = dict(json.loads((src / "config.json").read_text()), eos_token_id=None)
    d = _copy_dir(src, tmp_path / "m", config=json.dumps(cfg))
    _tokenizer().save(str(d / "tokenizer.json"))
    cli.main([str(d), "--prompt", "Hi", "--device", "cpu", "--max-new-tokens", "1000"])
    err = capsys.readouterr().err
    assert "decode: 61 tokens" in err and "stopped at the end of the model's context (64 " \
        "positions)" in err


def test_sampling_seeded_and_processors(checkpoints):
    m = load(checkpoints["qwen3"][0], device="cpu")
    kw = dict(max_new_tokens=6, temperature=0.8, top_k=40, top_p=0.9, min_p=0.02,
              repetition_penalty=1.3)
    a = m.generate_ids([PROMPTS[1]], seed=7, **kw)
    assert a == m.generate_ids([PROMPTS[1]], seed=7, **kw)
    assert len(a[0]) >= 1 and all(0 <= t < 128 for t in a[0])


@pytest.mark.parametrize("seed", [0, 1])
def test_logit_processors_match_transformers(device, seed):
    from transformers import (MinPLogitsWarper, RepetitionPenaltyLogitsProcessor,
                              TopKLogitsWarper, TopPLogitsWarper)
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((2, 128)).astype(np.float32) * 3
    seen_ids = rng.integers(0, 128, (2, 10))
    t = torch.from_numpy(logits)
    want = RepetitionPenaltyLogitsProcessor(1.3)(torch.from_numpy(seen_ids), t.clone())
    seen = np.zeros((2, 128), bool)
    np.put_along_axis(seen, seen_ids, True, axis=1)
    s = xp.asarray(logits, device=device)
    got = repetition_penalty(s, xp.asarray(seen, device=device), 1.3)
    np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-6)
    for warper, kw in ((TopKLogitsWarper(7), dict(top_k=7)), (TopPLogitsWarper(0.8), dict(top_p=0.8)),
                       (MinPLogitsWarper(0.1), dict(min_p=0.1))):
        ref = warper(None, t.clone()).numpy()
        out = to_numpy(nn.filter_logits(s, **kw))
        np.testing.assert_array_equal(np.isinf(out), np.isinf(ref))
        np.testing.assert_allclose(out[~np.isinf(out)], ref[~np.isinf(ref)], rtol=1e-6)


def test_stop_tokens(checkpoints):
    m = load(checkpoints["qwen2"][0], device="cpu")
    ids = m.generate_ids([PROMPTS[1]], max_new_tokens=8, stop_tokens=())[0]
    assert len(ids) == 8
    k = next(i for i, t in enumerate(ids) if t >= 3)          # a printable character
    assert m.generate_ids([PROMPTS[1]], max_new_tokens=8, stop_tokens={ids[k]})[0] == \
        ids[:ids.index(ids[k]) + 1]
    m.eos_ids = {ids[k]}                                      # an end token ends the text
    want = m.tokenizer.decode(ids[:ids.index(ids[k])], skip_special_tokens=True)
    assert m.generate(PROMPTS[1], max_new_tokens=8) == want


def test_bfloat16_weights(checkpoints):
    d, ref = checkpoints["qwen3"]
    m = load(d, device="cpu", dtype=xp.bfloat16)
    with torch.no_grad():
        want = ref(torch.tensor([PROMPTS[1]])).logits.numpy()
    got = m.forward(xp.asarray([PROMPTS[1]], dtype=xp.int32))
    assert got.dtype == xp.bfloat16
    np.testing.assert_allclose(to_numpy(xp.astype(got, xp.float32)), want, atol=0.1, rtol=0.05)


def test_stop_strings_and_streaming(checkpoints, device):
    m = load(checkpoints["llama"][0], device=device)
    prompt = "Hello, world"
    ids = m.generate_ids([prompt], max_new_tokens=12)[0]
    full = m.tokenizer.decode([t for t in ids if t != 2], skip_special_tokens=True)
    assert m.generate(prompt, max_new_tokens=12) == full
    pieces = list(m.generate(prompt, max_new_tokens=12, stream=True))
    assert "".join(pieces) == full and all(isinstance(p, str) for p in pieces)
    if len(full) >= 4:
        stop = full[2:4]
        cut = full[:full.find(stop)]
        assert m.generate(prompt, max_new_tokens=12, stop=stop) == cut
        assert "".join(m.generate(prompt, max_new_tokens=12, stop=[stop], stream=True)) == cut


def test_chat_template_as_transformers(checkpoints):
    d = checkpoints["qwen2"][0]
    m = load(d, device="cpu")
    msgs = [{"role": "system", "content": "Be brief. "}, {"role": "user", "content": "Hi!"}]
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(d / "tokenizer.json"),
                                               bos_token="<s>", eos_token="</s>",
                                               chat_template=CHAT)
    want = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert m.chat_prompt(msgs) == want
    ids = tok.apply_chat_template(msgs, add_generation_prompt=True)
    ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    assert m.tokenizer.encode(want, add_special_tokens=False).ids == ids
    assert m.chat(msgs, max_new_tokens=5) == m.generate(ids, max_new_tokens=5)
    one = [{"role": "user", "content": "Hi!"}]
    assert m.chat_prompt("Hi!") == m.chat_prompt(one)            # a string: the user's message
    with pytest.raises(TypeError, match=r"messages: expected a string or a list of"):
        m.chat_prompt([("user", "Hi!")])


def _saved_by_transformers(src, dst, chat_template):
    """The checkpoint ``src`` with its tokenizer saved by transformers' save_pretrained:
    transformers 5 writes the template to chat_template.jinja (named ones beside it in
    additional_chat_templates/), not into tokenizer_config.json."""
    d = _copy_dir(src, dst)
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(d / "tokenizer.json"),
                                               bos_token="<s>", eos_token="</s>",
                                               unk_token="<unk>", chat_template=chat_template)
    (d / "tokenizer_config.json").unlink()
    tok.save_pretrained(d)
    tc = json.loads((d / "tokenizer_config.json").read_text())
    if "chat_template" in tc or not (d / "chat_template.jinja").is_file():
        pytest.skip("this transformers keeps the chat template in tokenizer_config.json")
    return d


def test_chat_template_files_as_transformers(checkpoints, tmp_path):
    """chat_template.jinja and additional_chat_templates/*.jinja over tokenizer_config.json's
    chat_template, the "default" of named ones, as transformers' AutoTokenizer reads them;
    failing those, a processor's chat_template.json."""
    src = checkpoints["qwen2"][0]
    msgs = [{"role": "system", "content": "Be brief. "}, {"role": "user", "content": "Hi!"}]
    tool = "{% for m in messages %}[{{ m['content'] }}]{% endfor %}"

    def both(d):
        ref = transformers.AutoTokenizer.from_pretrained(d)
        want = ref.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        return load(d, device="cpu").chat_prompt(msgs), want

    d = _saved_by_transformers(src, tmp_path / "one", CHAT)
    m = load(d, device="cpu")
    got, want = both(d)
    assert got == want and m.chat_template == CHAT
    assert m.chat(msgs, max_new_tokens=3) == m.generate(
        m.tokenizer.encode(want, add_special_tokens=False).ids, max_new_tokens=3)
    tc = json.loads((d / "tokenizer_config.json").read_text())      # the file wins
    (d / "tokenizer_config.json").write_text(json.dumps(dict(tc, chat_template=tool)))
    got, ref = both(d)
    assert got == ref == want
    d = _saved_by_transformers(src, tmp_path / "named", {"default": CHAT, "tool_use": tool})
    assert (d / "additional_chat_templates" / "tool_use.jinja").is_file()
    got, want = both(d)
    assert got == want and load(d, device="cpu").chat_template == CHAT
    (d / "chat_template.jinja").unlink()           # named templates without a default
    with pytest.raises(ValueError, match=r"generate: model: expected a chat template .*got "
                                         r"named templates \['tool_use'\] without a 'default'"):
        load(d, device="cpu").chat_prompt(msgs)
    d = _copy_dir(src, tmp_path / "legacy")
    tc = json.loads((d / "tokenizer_config.json").read_text())
    tc.pop("chat_template")
    (d / "tokenizer_config.json").write_text(json.dumps(tc))
    (d / "chat_template.json").write_text(json.dumps({"chat_template": tool}))
    assert load(d, device="cpu").chat_prompt(msgs) == "[Be brief. ][Hi!]"
    (d / "chat_template.json").unlink()
    with pytest.raises(ValueError, match=r"expected a chat template \(chat_template.jinja or "
                                         r"tokenizer_config.json's chat_template\), got none"):
        load(d, device="cpu").chat("Hi!")


def test_cli_chat_template_file(checkpoints, tmp_path, capsys):
    """The CLI answers through chat_template.jinja by default; --chat on a model without a
    template is a usage error (exit code 2), not a traceback."""
    from ruda.nn import generate as cli
    d = _saved_by_transformers(checkpoints["qwen3"][0], tmp_path / "jinja", CHAT)
    args = ["--prompt", "Hi", "--device", "cpu", "--max-new-tokens", "4"]
    cli.main([str(d), *args])
    want = load(d, device="cpu").chat("Hi", max_new_tokens=4)
    assert want and capsys.readouterr().out.startswith(want)
    (d / "chat_template.jinja").unlink()
    with pytest.raises(SystemExit) as e:
        cli.main([str(d), *args, "--chat"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--chat: expected a model with a chat template" in err
    assert "Traceback" not in err


def _copy_dir(src, dst, config=None, weights=None):
    import shutil

    from safetensors.numpy import load_file, save_file
    shutil.copytree(src, dst)
    if config is not None:
        (dst / "config.json").write_text(config)
    if weights is not None:
        w = load_file(str(src / "model.safetensors"))
        w.update(weights)
        save_file(w, str(dst / "model.safetensors"), metadata={"format": "pt"})
    return dst


def test_bad_input(checkpoints, tmp_path):
    src = checkpoints["llama"][0]
    cfg = json.loads((src / "config.json").read_text())
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="config.json"):
        load(tmp_path / "empty", device="cpu")
    with pytest.raises(ValueError, match="config.json"):
        load(_copy_dir(src, tmp_path / "bad", config="{not json"), device="cpu")
    with pytest.raises(ValueError, match=r"config.json.*'hidden_size'"):
        load(_copy_dir(src, tmp_path / "key", config=json.dumps(
            {k: v for k, v in cfg.items() if k != "hidden_size"})), device="cpu")
    with pytest.raises(ValueError, match=r"LlamaForCausalLM.*Qwen3ForCausalLM.*gpt2.*GPT2LMHeadModel"):
        load(_copy_dir(src, tmp_path / "arch", config=json.dumps(
            dict(cfg, model_type="gpt2", architectures=["GPT2LMHeadModel"]))), device="cpu")
    with pytest.raises(ValueError, match=r"model.layers.1.self_attn.k_proj.weight.*\(32, 64\)"):
        load(_copy_dir(src, tmp_path / "shape", weights={
            "model.layers.1.self_attn.k_proj.weight": np.zeros((16, 64), np.float32)}),
            device="cpu")
    with pytest.raises(ValueError, match=r"no_such\.gguf"):
        load(tmp_path / "no_such.gguf")
    m = load(src, device="cpu")
    with pytest.raises(ValueError, match=r"prompt.*max_len=8.*15 tokens"):
        m.generate_ids([PROMPTS[0]], max_new_tokens=2, max_len=8)
    with pytest.raises(ValueError, match=r"token ids in \[0, 128\)"):
        m.generate_ids([[1, 500]], max_new_tokens=2)


def test_argument_errors(checkpoints):
    """Bad arguments of generate / steps / generate_ids: a clear error naming the argument,
    raised at the call even when streamed."""
    m = load(checkpoints["llama"][0], device="cpu")
    for stop, got in ((5, "got int"), (["a", 5], "got a list holding int"),
                      (b"x", "got bytes"), ((None,), "got a tuple holding NoneType")):
        with pytest.raises(TypeError, match=rf"generate: stop: expected None, a str or a list "
                                            rf"of str, {got}"):
            m.generate("Hi", max_new_tokens=2, stop=stop)
    for bad, cls, got in (("9", TypeError, "got str"), (-1, ValueError, "got -1"),
                          (20.0, TypeError, "got float"), (True, TypeError, "got bool")):
        with pytest.raises(cls, match=rf"generate: max_len: expected an int >= 1 or None, {got}"):
            m.generate("Hi", max_new_tokens=2, max_len=bad)
    with pytest.raises(TypeError, match=r"max_new_tokens: expected an int >= 0, got str"):
        m.generate("Hi", max_new_tokens="2")
    with pytest.raises(TypeError, match=r"repetition_penalty: expected a real number > 0 or "
                                        r"None, got str"):
        m.generate("Hi", max_new_tokens=2, repetition_penalty="x")
    for bad in (float("nan"), float("inf"), 0.0):
        with pytest.raises(ValueError, match=rf"repetition_penalty: expected a number in "
                                             rf"\(0.0, inf\), got {bad}"):
            m.generate("Hi", max_new_tokens=2, repetition_penalty=bad)
    for bad in (float("nan"), float("inf"), -1):    # inf: uniform, and NaN scores where -inf
        with pytest.raises(ValueError, match=rf"generate: temperature: expected a number in "
                                             rf"\[0.0, inf\), got {bad}"):
            m.generate("Hi", max_new_tokens=2, temperature=bad, stream=True)
    with pytest.raises(TypeError, match=r"seed: expected an int in \[0, 2\*\*64\) or None"):
        m.generate("Hi", max_new_tokens=2, temperature=1.0, seed="1")
    for prompt in (None, 5):
        with pytest.raises(TypeError, match=rf"generate: prompt: expected a str, a list of token "
                                            rf"ids, or a list of those \(a batch\), got "
                                            rf"{type(prompt).__name__}"):
            m.generate(prompt, max_new_tokens=2)
    with pytest.raises(TypeError, match=r"prompt: expected a str or a list of int token ids, "
                                        r"got a list holding str"):
        m.generate([1, "a"], max_new_tokens=2)
    with pytest.raises(ValueError, match=r"prompt: expected a prompt or a non-empty batch"):
        m.generate([], max_new_tokens=2)
    with pytest.raises(TypeError, match=r"prompts: expected a list of token id lists .*got str "
                                        r"at index 0"):
        m.steps(["abc"])
    with pytest.raises(TypeError, match=r"prompts: expected a list of token id lists"):
        m.steps("abc")
    with pytest.raises(ValueError, match=r"prompts: expected at least one token per prompt, "
                                         r"got an empty prompt at index 1"):
        m.steps([[1, 2], []])
    with pytest.raises(TypeError, match=r"generate: prompts: expected a list of prompts"):
        m.generate_ids(None, max_new_tokens=2)
    # checked at the call, before the first next() (temperature above too)
    with pytest.raises(ValueError, match=r"top_p: expected a number in \(0.0, 1.0\]"):
        m.steps([[1, 5]], temperature=1.0, top_p=2.0)
    m.tokenizer.post_processor = None                 # no BOS: "" gives no tokens
    with pytest.raises(ValueError, match=r"prompt: expected a text of at least one token, got "
                                         r"an empty prompt \(\'\' gives no tokens\)"):
        m.generate("", max_new_tokens=2)


def test_cli(checkpoints, capsys):
    """The prompt as a user message in the model's chat template where it has one (as
    llama.cpp's CLI), plain text with --raw; the speeds on stderr."""
    from ruda.nn import generate as cli
    d = checkpoints["qwen3"][0]
    m = load(d, device="cpu")
    assert m.tokenizer_config.get("chat_template") == CHAT
    cli.main([str(d), "--prompt", "Hi", "--device", "cpu", "--max-new-tokens", "4"])
    out = capsys.readouterr()
    want = m.chat([{"role": "user", "content": "Hi"}], max_new_tokens=4)
    assert want and out.out.startswith(want)
    assert "prefill" in out.err and "tokens/s" in out.err
    cli.main([str(d), "--prompt", "Hi", "--device", "cpu", "--max-new-tokens", "4", "--raw"])
    out = capsys.readouterr()
    want = m.generate("Hi", max_new_tokens=4)
    assert want and out.out.startswith(want)
    assert "prefill" in out.err and "decode" in out.err and "tokens/s" in out.err
    # one new token because of --max-new-tokens, not the end of the text: not called an end
    cli.main([str(d), "--prompt", "Hi", "--device", "cpu", "--max-new-tokens", "1", "--raw"])
    assert "ended the text" not in capsys.readouterr().err
    # a sampling argument generate refuses: a usage error naming it, not a traceback
    with pytest.raises(SystemExit) as e:
        cli.main([str(d), "--prompt", "Hi", "--device", "cpu", "--temperature", "-1"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "temperature" in err and "Traceback" not in err
