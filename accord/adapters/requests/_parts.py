"""Content parts on the wire -> chat parts (SPEC I2, I3, I9).

Parts are translated one by one, never flattened away: text stays text, an image stays an
image for a vision model and becomes a short placeholder for a text-only one, so a
request carrying a screenshot still gets an answer instead of an error.
"""

from __future__ import annotations

import re

from ._conversation import ImagePart, Part, TextPart
from ._wire import (
    ContentPart,
    EncryptedContentPart,
    InputAudio,
    InputFile,
    InputImage,
    InputText,
    OutputText,
    Refusal,
)

IMAGE_PLACEHOLDER = "[image omitted: this model reads text only]"
AUDIO_PLACEHOLDER = "[audio omitted: this model reads text only]"

_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{32,}={0,2}")


def is_ciphertext(value: str) -> bool:
    """One long base64 token (a real ciphertext) rather than readable text (SPEC I3).

    Readable payloads have spaces, punctuation or at least lack the mix of cases and
    digits that random bytes in base64 always show at this length.
    """
    token = value.strip()
    if not _TOKEN.fullmatch(token):
        return False
    return (
        any(c.isdigit() for c in token)
        and any(c.isupper() for c in token)
        and any(c.islower() for c in token)
    )


def translate_part(part: ContentPart, *, vision: bool) -> Part | None:
    """One wire part as a chat part; None for a part that carries nothing readable."""
    if isinstance(part, InputText | OutputText):
        return TextPart(text=part.text)
    if isinstance(part, Refusal):
        return TextPart(text=part.refusal)
    if isinstance(part, InputImage):
        if vision and (part.image_url or part.file_id):
            return ImagePart(url=part.image_url, file_id=part.file_id, detail=part.detail)
        return TextPart(text=IMAGE_PLACEHOLDER)
    if isinstance(part, InputFile):
        label = part.filename or part.file_id or part.file_url or "attachment"
        return TextPart(text=f"[file {label} omitted: files are not read by this server]")
    if isinstance(part, InputAudio):
        return TextPart(text=AUDIO_PLACEHOLDER)
    assert isinstance(part, EncryptedContentPart)
    if is_ciphertext(part.encrypted_content):
        return None
    return TextPart(text=part.encrypted_content)


def translate_content(content: str | list[ContentPart], *, vision: bool) -> tuple[Part, ...]:
    if isinstance(content, str):
        return (TextPart(text=content),)
    parts = (translate_part(p, vision=vision) for p in content)
    return tuple(p for p in parts if p is not None)


def content_text(content: str | list[ContentPart]) -> str:
    """The readable text of wire content, for matching and logs (images count as nothing)."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in content:
        translated = translate_part(part, vision=True)
        if isinstance(translated, TextPart):
            texts.append(translated.text)
    return "\n\n".join(texts)
