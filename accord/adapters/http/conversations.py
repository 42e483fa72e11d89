"""``/v1/conversations``: create, retrieve, update, delete; list, add, retrieve and delete items.

The shapes are OpenAI's: a Conversation object (``id``, ``object``, ``created_at``,
``metadata``), items as the Responses API writes them (with ids), and item lists paged with
``after``/``limit``/``order`` like every OpenAI list. ``POST /v1/conversations`` and ``POST
.../items`` take at most 20 items, as OpenAI's do; every item is checked as an input item of
``POST /v1/responses`` would be, so whatever a conversation holds can be rendered.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from accord.adapters.conversations import new_items
from accord.adapters.http.context import Context, Handler
from accord.adapters.http.exchange import Exchange
from accord.adapters.http.paging import list_body, path_part, read_page
from accord.adapters.store import ConversationRecord, DuplicateItem, ResponseStore
from accord.errors import NotFound, RequestError

#: The most items one create or add request may carry (OpenAI's limit).
MAX_ITEMS_PER_REQUEST = 20
MAX_METADATA_KEYS = 16
MAX_METADATA_KEY_CHARS = 64
MAX_METADATA_VALUE_CHARS = 512
#: Conversation bodies are small; a bigger one is refused before it is read whole.
MAX_BODY_BYTES = 8 * 1024 * 1024


class _Create(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    items: list[Any] | None = None
    metadata: dict[str, str] | None = None


class _Update(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    metadata: dict[str, str]


class _Add(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    items: list[Any]


def _decode(raw: bytes | bytearray, kind: type[Any]) -> Any:
    try:
        return msgspec.json.decode(raw or b"{}", type=kind)
    except msgspec.ValidationError as exc:
        message = str(exc)
        path = message.rsplit("`$.", 1)[-1].rstrip("`").replace("[...]", "") if "`$." in message else None
        raise RequestError(f"Invalid request body: {message}", param=path) from None
    except msgspec.DecodeError as exc:
        raise RequestError(f"The body is not valid JSON: {exc}") from None


def _metadata(metadata: dict[str, str]) -> dict[str, str]:
    if len(metadata) > MAX_METADATA_KEYS:
        raise RequestError(f"'metadata' may hold at most {MAX_METADATA_KEYS} keys.", param="metadata")
    for key, value in metadata.items():
        if len(key) > MAX_METADATA_KEY_CHARS:
            raise RequestError(
                f"metadata keys are at most {MAX_METADATA_KEY_CHARS} characters.", param=f"metadata.{key}"
            )
        if len(value) > MAX_METADATA_VALUE_CHARS:
            raise RequestError(
                f"metadata values are at most {MAX_METADATA_VALUE_CHARS} characters.", param=f"metadata.{key}"
            )
    return metadata


def _items(raw: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    if len(raw) > MAX_ITEMS_PER_REQUEST:
        raise RequestError(f"At most {MAX_ITEMS_PER_REQUEST} items can be added at once.", param="items")
    items = new_items(raw, "items")
    seen: set[str] = set()
    for i, (item_id, _) in enumerate(items):
        if item_id in seen:
            raise RequestError(f"Item id '{item_id}' appears twice.", param=f"items[{i}].id")
        seen.add(item_id)
    return items


def not_found(conversation_id: str) -> NotFound:
    return NotFound(f"Conversation with id '{conversation_id}' not found.", param="conversation_id")


class ConversationRoutes:
    def __init__(self, store: ResponseStore, new_id: Any) -> None:
        self.store = store
        self.new_id = new_id

    def routes(self) -> list[tuple[str, str, Handler]]:
        one = r"/v1/conversations/(?P<id>[^/]+)"
        item = one + r"/items/(?P<item>[^/]+)"
        return [
            ("POST", r"/v1/conversations", self.create),
            ("GET", one, self.retrieve),
            ("POST", one, self.update),
            ("DELETE", one, self.delete),
            ("GET", one + r"/items", self.list_items),
            ("POST", one + r"/items", self.add_items),
            ("GET", item, self.retrieve_item),
            ("DELETE", item, self.delete_item),
        ]

    async def _conversation(self, conversation_id: str) -> ConversationRecord:
        found = await self.store.get_conversation(conversation_id)
        if found is None:
            raise not_found(conversation_id)
        return found

    async def create(self, ctx: Context, ex: Exchange) -> None:
        body: _Create = _decode(await ex.read_body(MAX_BODY_BYTES), _Create)
        items = _items(body.items or [])
        try:
            record = await self.store.create_conversation(
                self.new_id("conv"),
                created_at=int(time.time()),
                metadata=_metadata(body.metadata or {}),
                items=items,
            )
        except DuplicateItem as exc:
            raise RequestError(f"Item id '{exc.item_id}' appears twice.", param="items") from None
        await ex.json(200, record.body())

    async def retrieve(self, ctx: Context, ex: Exchange) -> None:
        await ex.json(200, (await self._conversation(path_part(ex))).body())

    async def update(self, ctx: Context, ex: Exchange) -> None:
        body: _Update = _decode(await ex.read_body(MAX_BODY_BYTES), _Update)
        conversation_id = path_part(ex)
        record = await self.store.update_conversation(conversation_id, metadata=_metadata(body.metadata))
        if record is None:
            raise not_found(conversation_id)
        await ex.json(200, record.body())

    async def delete(self, ctx: Context, ex: Exchange) -> None:
        conversation_id = path_part(ex)
        if not await self.store.delete_conversation(conversation_id):
            raise not_found(conversation_id)
        await ex.json(200, {"id": conversation_id, "object": "conversation.deleted", "deleted": True})

    async def list_items(self, ctx: Context, ex: Exchange) -> None:
        conversation_id = path_part(ex)
        page = await read_page(
            ex, self.store.conversation_items, conversation_id, "item", "this conversation"
        )
        if page is None:
            raise not_found(conversation_id)
        await ex.json(200, page.body())

    async def add_items(self, ctx: Context, ex: Exchange) -> None:
        body: _Add = _decode(await ex.read_body(MAX_BODY_BYTES), _Add)
        conversation_id = path_part(ex)
        items = _items(body.items)
        try:
            added = await self.store.append_conversation_items(conversation_id, items)
        except DuplicateItem as exc:
            raise RequestError(
                f"The conversation already holds an item with id '{exc.item_id}'.", param="items"
            ) from None
        if added is None:
            raise not_found(conversation_id)
        await ex.json(200, list_body([item.decoded() for item in added], has_more=False))

    async def retrieve_item(self, ctx: Context, ex: Exchange) -> None:
        conversation_id, item_id = path_part(ex), path_part(ex, "item")
        found = await self.store.conversation_item(conversation_id, item_id)
        if found is None:
            await self._conversation(conversation_id)
            raise NotFound(f"Item with id '{item_id}' not found.", param="item_id")
        await ex.json(200, found.decoded())

    async def delete_item(self, ctx: Context, ex: Exchange) -> None:
        conversation_id, item_id = path_part(ex), path_part(ex, "item")
        record = await self._conversation(conversation_id)
        if not await self.store.delete_conversation_item(conversation_id, item_id):
            raise NotFound(f"Item with id '{item_id}' not found.", param="item_id")
        # OpenAI answers an item deletion with the conversation it was deleted from.
        await ex.json(200, record.body())
