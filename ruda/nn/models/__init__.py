"""ruda.nn.models: pretrained models on ruda.nn, loaded from a Hugging Face directory
(config.json, safetensors, tokenizer.json) or a .gguf file.

``load(path, device=None, dtype=None, quantized=True)`` returns a decoder (``generate``,
``chat``, ``forward``, ``tokenizer``) for the architectures in ``SUPPORTED``, or for a BERT
directory an encoder (:class:`Bert`: ``encode`` gives pooled sentence embeddings)."""
import os as _os

from ruda.nn.models.llama import ARCHITECTURES as _DECODERS, SUPPORTED, Llama
from ruda.nn.models.bert import Bert

__all__ = ["Bert", "Llama", "SUPPORTED", "load"]


def _err(cls, arg, expected, got):
    return cls(f"ruda.nn.models.load: {arg}: expected {expected}, got {got}")


def _check_arch(config):
    arch = config.get("model_type")
    if arch in _DECODERS:
        return Llama
    from ruda.nn.models import bert
    raise _err(ValueError, "config.json model_type",
               f"one of the supported architectures {', '.join(SUPPORTED + bert.SUPPORTED)}",
               f"{arch!r} ({', '.join(map(str, config.get('architectures') or [arch]))})")


def _build(config, weights, tokenizer, tokenizer_config, generation_config, device, dtype):
    return _check_arch(config)(config, weights, tokenizer, tokenizer_config, generation_config,
                               device, dtype)


def load(path, device=None, dtype=None, quantized=True):
    """The model in ``path``: a Hugging Face model directory or a ``.gguf`` file.

    Weights go to ``device`` (default: ruda's default device) straight from the memory-mapped
    file, cast to ``dtype`` (a real floating dtype) when given. ``quantized`` (GGUF only): keep
    Q8_0/Q4_0/Q4_1 tensors quantized (``ruda.nn.QuantizedWeight``) rather than dequantizing them
    at load. The chat template comes from ``chat_template.jinja`` (and
    ``additional_chat_templates/``) or tokenizer_config.json, as transformers reads it."""
    from ruda.nn.models import _hf
    p = _hf.fspath("load", path, "a model directory or a .gguf file")
    dtype = _hf.float_dtype("load", dtype)
    _hf.boolean("load", "quantized", quantized)
    if p.endswith(".gguf"):
        if not _os.path.isfile(p):
            raise _err(ValueError, "path", "an existing .gguf file", repr(p))
        try:
            from ruda.nn.models._gguf import load_gguf
        except ImportError as e:
            raise _err(ValueError, "path", "a model directory (GGUF loading is not available "
                       f"in this build: {e})", repr(p)) from None
        config, weights, tok, tc = load_gguf(p, device, dtype, quantized)
        return _build(config, weights, tok, tc, None, device, dtype)
    if not _os.path.isdir(p):
        raise _err(ValueError, "path", "a model directory or a .gguf file", repr(p))
    from ruda.nn.models import bert
    config = _hf.read_config(p)
    if config.get("model_type") in bert.ARCHITECTURES:       # an encoder: encode()
        return bert.load(p, device, dtype)
    _check_arch(config)                        # an unsupported model before reading weights
    weights = _hf.load_safetensors(p, device, dtype)
    tok = _hf.load_tokenizer(p) if _os.path.isfile(_os.path.join(p, "tokenizer.json")) else None
    tc = _hf.read_json(p, "tokenizer_config.json") or {}
    template = _hf.read_chat_template(p, tc.get("chat_template"))
    if template is not None:
        tc = dict(tc, chat_template=template)
    return _build(config, weights, tok, tc, _hf.read_json(p, "generation_config.json"), device,
                  dtype)
