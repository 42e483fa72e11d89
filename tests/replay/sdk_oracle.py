"""The openai SDK's streaming helper as an oracle: does it raise on these bytes?

The audit marks the defects the SDK raises on (``breaks_sdk``); these tests hold that claim against the
real helper (openai 3.x, docs/spec.md A6), fed the captured bytes through an in-memory transport.
"""

from __future__ import annotations

import httpx2
import openai

_TERMINALS = ("response.completed", "response.incomplete", "response.failed")


def sdk_outcome(body: bytes) -> str | None:
    """``None`` when the helper reads the stream cleanly, else the exception it raised."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = openai.OpenAI(
        api_key="test",
        base_url="http://audit.invalid/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )
    try:
        with client.responses.stream(model="test-model", input="hi") as stream:
            terminal = None
            for event in stream:
                if event.type in _TERMINALS:
                    terminal = event.type
            # incomplete and failed are legitimate ends; only a completed (or missing) terminal is read back.
            if terminal in (None, "response.completed"):
                stream.get_final_response()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        client.close()
    return None
