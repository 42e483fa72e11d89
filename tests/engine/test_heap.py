"""The engine's heap settings give freed buffers back to the OS (glibc only; elsewhere they are no-ops)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc only"
)

# Buffers of 1 MiB with a small one kept between each pair: freeing the big ones leaves holes in the
# heap that glibc does not return by itself (only its top is trimmed on free).
PROBE = """
import ctypes
from accord.engine.local._heap import bound_heap_growth, release_freed_memory

def rss_mib():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(fields["VmRSS"].split()[0]) / 1024

ctypes.CDLL("libc.so.6").mallopt(-3, 4 << 20)  # 1 MiB buffers from the heap, as the engine has them
big, small = [], []
for _ in range(300):
    b = ctypes.create_string_buffer(1 << 20)
    ctypes.memset(b, 1, 1 << 20)
    big.append(b)
    small.append(ctypes.create_string_buffer(64))
del big
held = rss_mib()
release_freed_memory()
trimmed = rss_mib()
print(held, trimmed, bound_heap_growth())
"""


def test_release_returns_freed_heap_pages_and_the_threshold_is_taken() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    held, trimmed, taken = out.stdout.split()
    assert float(held) - float(trimmed) > 200, out.stdout  # about 300 MiB of holes returned
    assert taken == "True"


def _vm_flags(address: int) -> list[str]:
    """The VmFlags of this process's mapping that holds ``address``."""
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split(maxsplit=1)[0]
            if "-" in head and not head.endswith(":"):
                start, end = (int(x, 16) for x in head.split("-"))
                inside = start <= address < end
            elif inside and head == "VmFlags:":
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


def test_kv_cache_asks_for_small_pages() -> None:
    """Huge pages would commit 2 MiB per layer, key/value and head at a block's first write.

    SmolLM2's cache shape (30 layers, 3 KV heads, 1,024 blocks of 16 positions): every piece of one
    block lies 2 MiB from the next. With transparent huge pages ``always`` one 16-token request
    took the engine from 355 to 715 MiB; the cache's mapping must say ``nh`` (no huge pages).
    """
    import torch

    from accord.engine.local._blocks import NativeCache
    from accord.engine.local._model import KVCache

    native = NativeCache(30, 3, 64, 1024, 16)
    assert "nh" in _vm_flags(native.data.ctypes.data + native.data.nbytes // 2)
    cache = KVCache(30, 3, 64, 1024, 16, torch.bfloat16, torch.device("cpu"))
    middle = cache.data.data_ptr() + cache.nbytes // 2
    assert "nh" in _vm_flags(middle)
