"""The stored-response routes (SPEC S2): retrieve, replay, delete, input items, cancel.

Every answer is read from the stored log: the JSON body is its fold, the replayed stream
its projection. A background response still running in this process is read from its
live log instead, which is never behind the store.
"""

from __future__ import annotations

import anyio

from accord.adapters.http.background import BackgroundRuns, LiveRun, stream_live, wait_final
from accord.adapters.http.context import Context, Handler
from accord.adapters.http.exchange import Exchange
from accord.adapters.http.paging import list_body, path_part, query_int, read_page
from accord.adapters.runner import Stop
from accord.adapters.store import ResponseRecord, ResponseStore, after, page_item, replay
from accord.errors import NotFound, RequestError

#: How long a cancel waits for another process to end the response it runs.
CANCEL_WAIT_S = 10.0
#: How long a replay of a response running in another process waits for it to end.
FOLLOW_WAIT_S = 600.0


def not_found(response_id: str) -> NotFound:
    return NotFound(f"Response with id '{response_id}' not found.", param="response_id")


def _flag(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1", "yes")


class StoredRoutes:
    def __init__(self, store: ResponseStore, runs: BackgroundRuns) -> None:
        self.store = store
        self.runs = runs

    def routes(self) -> list[tuple[str, str, Handler]]:
        one = r"/v1/responses/(?P<id>[^/]+)"
        return [
            ("GET", one, self.retrieve),
            ("DELETE", one, self.delete),
            ("GET", one + r"/input_items", self.input_items),
            ("POST", one + r"/cancel", self.cancel),
        ]

    async def _record(self, response_id: str) -> ResponseRecord:
        record = await self.store.get(response_id)
        if record is None:
            raise not_found(response_id)
        return record

    async def retrieve(self, ctx: Context, ex: Exchange) -> None:
        response_id = path_part(ex)
        live = self.runs.live.get(response_id)
        if not _flag(ex.query.get("stream")):
            if live is not None:
                await ex.json(200, live.body())
            else:
                await ex.json(200, (await self._record(response_id)).snapshot().body())
            return
        starting_after = query_int(ex, "starting_after", -1, -1, 2**62)
        if live is not None:
            await stream_live(ex, live, starting_after)
            return
        record = await self._record(response_id)
        if not record.final:
            # Running in another process: its events reach the store when it ends.
            async with anyio.create_task_group() as group:

                async def leave_on_disconnect() -> None:
                    await ex.wait_disconnect()
                    group.cancel_scope.cancel()

                group.start_soon(leave_on_disconnect)
                await wait_final(self.store, response_id, FOLLOW_WAIT_S)
                group.cancel_scope.cancel()
            if ex.disconnected:
                return
            record = await self._record(response_id)
        events = after(replay(record.decoded_events(), record.keepalive_seqs), starting_after)
        await ex.start_sse()
        if events:
            await ex.sse(events)
        await ex.end_sse()

    async def delete(self, ctx: Context, ex: Exchange) -> None:
        response_id = path_part(ex)
        live = self.runs.live.get(response_id)
        if live is not None:
            await _cancel_live(live)
        if not await self.store.delete(response_id):
            raise not_found(response_id)
        await ex.json(200, {"id": response_id, "object": "response", "deleted": True})

    async def input_items(self, ctx: Context, ex: Exchange) -> None:
        response_id = path_part(ex)
        page = await read_page(ex, self.store.input_items, response_id, "input item", "this response")
        if page is None:
            raise not_found(response_id)
        await ex.json(200, list_body([page_item(row) for row in page.items], has_more=page.has_more))

    async def cancel(self, ctx: Context, ex: Exchange) -> None:
        response_id = path_part(ex)
        live = self.runs.live.get(response_id)
        if live is not None:
            await _cancel_live(live)
            await ex.json(200, live.body())
            return
        record = await self._record(response_id)
        if not record.background:
            raise RequestError("Only responses created with 'background: true' can be cancelled.")
        if not record.final:
            await self.store.request_cancel(response_id)
            await wait_final(self.store, response_id, CANCEL_WAIT_S)
            record = await self._record(response_id)
        await ex.json(200, record.snapshot().body())


async def _cancel_live(live: LiveRun) -> None:
    live.stop(Stop.CANCELLED)
    await live.done.wait()
