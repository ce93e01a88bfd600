"""Text generation from the command line:

    python -m ruda.nn.generate MODEL --prompt "..." [--device cpu] [--max-new-tokens N]

MODEL is a Hugging Face model directory or a .gguf file. A model with a chat template (an
instruct model) gets the prompt as a user message in it, as llama.cpp's CLI does; ``--raw``
continues the prompt as plain text instead. The text streams to stdout; prefill and decode
speeds (tokens/s) go to stderr, and a note where the text stopped at the end of the model's
context (its max_position_embeddings, or as far as its rope scaling stretches that)."""
import argparse
import itertools
import sys
import time


def _parser():
    ap = argparse.ArgumentParser(prog="python -m ruda.nn.generate", description=__doc__.split(
        "\n")[0])
    ap.add_argument("model", help="a Hugging Face model directory or a .gguf file")
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--device", default=None, help="cpu, cuda or wgpu (default: ruda's default)")
    ap.add_argument("--dtype", default=None, choices=("float32", "bfloat16"))
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    ap.add_argument("--top-k", type=int, default=None)
    ap.add_argument("--top-p", type=float, default=None)
    ap.add_argument("--min-p", type=float, default=None)
    ap.add_argument("--repetition-penalty", type=float, default=None)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--stop", action="append", default=[], help="a stop string (repeatable)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--chat", action="store_true",
                      help="wrap the prompt as a user message in the model's chat template "
                           "(the default where the model has one)")
    mode.add_argument("--raw", action="store_true",
                      help="continue the prompt as plain text, chat template or not")
    ap.add_argument("--no-quantized", action="store_true",
                    help="GGUF: dequantize weights at load")
    return ap


def main(argv=None):
    import ruda as xp
    from ruda.nn.models import load
    from ruda.nn.models._generate import _Text

    ap = _parser()
    args = ap.parse_args(argv)
    dtype = None if args.dtype is None else getattr(xp, args.dtype)
    t = time.perf_counter()
    try:
        model = load(args.model, device=args.device, dtype=dtype,
                     quantized=not args.no_quantized)
    except (ValueError, TypeError, OSError) as e:      # a bad path, config or weight, named
        ap.error(str(e))
    print(f"loaded {args.model} on {model.device} in {time.perf_counter() - t:.2f} s",
          file=sys.stderr)
    if not hasattr(model, "steps"):
        ap.error(f"model: expected a decoder that generates text, got {type(model).__name__}, "
                 "an encoder (its sentence embeddings: ruda.nn.models.load(MODEL).encode(...))")
    if args.chat and model.chat_template is None:
        ap.error("--chat: expected a model with a chat template (chat_template.jinja or "
                 "tokenizer_config.json's chat_template), got none; --raw continues the prompt "
                 "as plain text")
    chat = args.chat or (not args.raw and model.chat_template is not None)
    if chat:
        ids = model.tokenizer.encode(model.chat_prompt([{"role": "user", "content": args.prompt}]),
                                     add_special_tokens=False).ids
    else:
        ids = model.encode(args.prompt)
    text = _Text(model.tokenizer, args.stop)
    n, ended = 0, False
    t0 = time.perf_counter()
    prefill = None
    try:                                    # the arguments are checked by the first step
        steps = model.steps([ids], max_new_tokens=args.max_new_tokens,
                            temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                            min_p=args.min_p, repetition_penalty=args.repetition_penalty,
                            seed=args.seed)
        first = next(steps, None)
    except (ValueError, TypeError) as e:
        ap.error(str(e))
    for toks in itertools.chain([first] if first is not None else [], steps):
        n += 1
        if prefill is None:
            prefill = time.perf_counter() - t0
        ended = toks[0] in model.eos_ids
        piece = text.flush() if ended else text.push(toks)
        sys.stdout.write(piece)
        sys.stdout.flush()
        if text.done:
            break
    at_context = not ended and not text.done and n == model.cfg.context - len(ids) + 1
    sys.stdout.write(text.flush() + "\n")
    total = time.perf_counter() - t0
    if prefill is not None:
        print(f"prefill: {len(ids)} tokens in {prefill:.3f} s ({len(ids) / prefill:.1f} "
              "tokens/s)", file=sys.stderr)
    if n > 1:
        dec = total - prefill
        print(f"decode: {n - 1} tokens in {dec:.3f} s ({(n - 1) / dec:.1f} tokens/s)",
              file=sys.stderr)
    elif n == 1 and ended and not chat:
        print("decode: none (the model ended the text at once; an instruct model answers "
              "through its chat template: --chat)", file=sys.stderr)
    if at_context and n < args.max_new_tokens:
        print(f"stopped at the end of the model's context ({model.cfg.context} positions)",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
