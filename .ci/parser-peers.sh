#!/usr/bin/env bash
# Makes a Python environment holding the reasoning and tool-call parsers of two peer servers, SGLang
# and vLLM, for the parse-stage benchmark's comparison (tests/benchmarks/peer_parsers.py), and
# prints the path of its python.
#
# The environment is cached outside the repository, keyed by the two versions, so a machine builds
# it once:  ${XDG_CACHE_HOME:-$HOME/.cache}/accord/parser-peers-sglang-<v>-vllm-<v>/
# A second run finds it complete (the .complete file is written last) and only prints the path.
#
# Both servers are installed without their dependencies (those pull GPU kernels and a CUDA torch);
# only the packages that their parser modules import are added, and torch is the CPU build, kept
# by a constraint so that no other package replaces it. The SGLang wheel is built for CPython 3.11:
# PYTHON must name one (default python3).
#
#   bash .ci/parser-peers.sh   -> /path/to/bin/python   (exit 1, saying why on stderr, when it cannot)
set -euo pipefail

sglang_version="${ACCORD_PEER_SGLANG_VERSION:-0.5.23}"
vllm_version="${ACCORD_PEER_VLLM_VERSION:-0.33.0}"
torch_version="2.13.0"
python="${PYTHON:-python3}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/accord"
prefix="$cache_root/parser-peers-sglang-$sglang_version-vllm-$vllm_version"
bin="$prefix/bin/python"

# What the parser modules import besides the standard library; found by importing them.
needs=(
    numpy orjson packaging openai psutil pybase64 regex cbor2 requests triton pillow starlette
    msgspec xgrammar fastapi aiohttp pyzmq ipython openai-harmony cachetools partial-json-parser
    prometheus-client cloudpickle uvloop py-cpuinfo ijson mistral-common
)
# The modules the benchmark loads; the environment is complete when all of them import.
modules=(
    sglang.srt.parser.reasoning_parser
    sglang.srt.function_call.function_call_parser
    sglang.srt.entrypoints.openai.protocol
    vllm.parser.parser_manager
    vllm.entrypoints.openai.chat_completion.protocol
    vllm.reasoning.qwen3_engine_reasoning_parser
    vllm.reasoning.glm47_moe_reasoning_parser
    vllm.tool_parsers.hermes_tool_parser
    vllm.tool_parsers.glm47_moe_tool_parser
)

if [[ -f "$prefix/.complete" && -x "$bin" ]]; then
    echo "$bin"
    exit 0
fi

if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    echo "parser-peers: the SGLang $sglang_version wheel needs CPython 3.11; $python is not (set PYTHON)" >&2
    exit 1
fi

mkdir -p "$cache_root"
# One build at a time per cache: a second caller waits for the first and then reuses its environment.
exec 9>"$prefix.lock"
flock 9
if [[ -f "$prefix/.complete" && -x "$bin" ]]; then
    echo "$bin"
    exit 0
fi

# Progress goes to stderr so that stdout carries only the python path.
trap 'echo "parser-peers: could not build the environment in $prefix" >&2' ERR
{
    rm -rf "$prefix"
    "$python" -m venv "$prefix"
    pip=("$bin" -m pip install --quiet --disable-pip-version-check)
    "${pip[@]}" "torch==$torch_version"
    # The helpers at the versions the two servers pin, where their pins agree; where they conflict
    # (xgrammar, openai), vLLM's.
    constraints="$prefix/constraints.txt"
    printf '%s\n' "torch==$torch_version" transformers==5.19.0 tokenizers==0.23.2 apache-tvm-ffi==0.1.11 \
        'fastapi>=0.133.0,<0.137.0' xgrammar==0.2.8 'openai>=2.25.0' openai-harmony==0.0.4 >"$constraints"
    "${pip[@]}" --no-deps "sglang==$sglang_version" "vllm==$vllm_version"
    "${pip[@]}" --constraint "$constraints" "${needs[@]}"
    # Both servers import from one process: check that every parser module loads.
    "$bin" -c 'import importlib, sys; [importlib.import_module(m) for m in sys.argv[1:]]' "${modules[@]}"
    touch "$prefix/.complete"
} 1>&2
trap - ERR

echo "$bin"
