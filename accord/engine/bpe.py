"""The byte-level BPE tokenizer of a GGUF vocabulary, rebuilt on the ``tokenizers`` package.

Used by both engines: the embedded one encodes with it, the remote one sends the ids it produces. A GGUF
file stores the vocabulary, the merges and each token's type, and names its pre-tokeniser
(``tokenizer.ggml.pre``, llama.cpp's names); the split regexes below are the ones llama.cpp uses for
those names. A pre-tokeniser not listed here is refused: a nearly-right tokenizer would silently change
what the model sees.

Token types (llama.cpp ``llama_token_type``): CONTROL tokens (``<|im_start|>``) are special added tokens;
USER_DEFINED tokens are added tokens that are not special. Both are matched whole in the text before BPE
runs, as llama.cpp does; only CONTROL tokens count as special when decoding skips specials.
"""

from __future__ import annotations

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

from accord.engine.model_files import TokenizerData, UnsupportedModel

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

_LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: llama.cpp pre-tokeniser names -> (split regex, or None for GPT-2's own; every digit its own piece).
PRE_TOKENIZERS: dict[str, tuple[str | None, bool]] = {
    "default": (None, False),
    "gpt-2": (None, False),
    "gpt2": (None, False),
    "smollm": (None, True),
    "starcoder": (None, True),
    "refact": (None, True),
    "llama3": (_LLAMA3, False),
    "llama-bpe": (_LLAMA3, False),
    "smaug-bpe": (_LLAMA3, False),
    "qwen2": (_QWEN2, False),
    "deepseek-r1-qwen": (_QWEN2, False),
}


def build_bpe(data: TokenizerData) -> Tokenizer:
    """The ``tokenizers`` tokenizer of ``data``; UnsupportedModel where it cannot be rebuilt exactly."""
    if data.model != "gpt2":
        raise UnsupportedModel(f"tokenizer model {data.model!r} is not supported (byte-level BPE only)")
    if data.pre not in PRE_TOKENIZERS:
        raise UnsupportedModel(f"pre-tokenizer {data.pre!r} is not supported")
    split, single_digits = PRE_TOKENIZERS[data.pre]
    # The first of duplicated texts keeps its id, as llama.cpp's lookup finds it.
    vocab = {text: i for i, text in reversed(list(enumerate(data.tokens)))}
    merges = [(a, b) for a, _, b in (m.partition(" ") for m in data.merges)]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    steps: list[pre_tokenizers.PreTokenizer] = []
    if single_digits:
        steps.append(pre_tokenizers.Digits(individual_digits=True))
    if split is not None:
        steps.append(pre_tokenizers.Split(Regex(split), behavior="isolated", invert=False))
    steps.append(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=split is None))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(steps)
    tokenizer.decoder = decoders.ByteLevel()
    kinds = data.token_types
    tokenizer.add_special_tokens(
        [
            AddedToken(data.tokens[i], special=True, normalized=False)
            for i, k in enumerate(kinds)
            if k == CONTROL
        ]
    )
    tokenizer.add_tokens(
        [
            AddedToken(data.tokens[i], special=False, normalized=False)
            for i, k in enumerate(kinds)
            if k == USER_DEFINED
        ]
    )
    return tokenizer
