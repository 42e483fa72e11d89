"""Sealed reasoning for stateless clients (SPEC I4).

A client that runs with ``store: false`` (Codex does) keeps the conversation itself and
hands our reasoning items back on the next turn. We give it the reasoning text sealed
with AES-GCM under a server key, so that the next prompt can render that reasoning
exactly, and a value we did not seal (another server's, or one edited on the way) is
recognised as such and ignored, never trusted.

Format: urlsafe base64 (no padding) of ``version byte | 12-byte nonce | ciphertext+tag``,
with the version byte also bound as associated data.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import secrets
from pathlib import Path

import structlog
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

_log = structlog.get_logger(__name__)

_VERSION = b"\x01"
_AAD = b"accord/reasoning/v1"
_NONCE = 12
KEY_FILE = "secret.key"


class Sealer:
    """Seals and unseals text under one 256-bit key."""

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError("the sealing key must be 32 bytes")
        self._aead = AESGCM(key)

    @classmethod
    def from_secret(cls, secret: str) -> Sealer:
        """A key from an operator's secret of any length (``--secret-key``)."""
        return cls(hashlib.sha256(b"accord/sealing-key\x00" + secret.encode("utf-8")).digest())

    @classmethod
    def from_settings(cls, secret_key: str | None, data_dir: Path) -> Sealer:
        """Use the configured secret, else the key kept in the data directory (created once)."""
        if secret_key:
            return cls.from_secret(secret_key)
        return cls(_load_or_create_key(data_dir / KEY_FILE))

    def seal(self, text: str) -> str:
        nonce = secrets.token_bytes(_NONCE)
        sealed = self._aead.encrypt(nonce, text.encode("utf-8"), _VERSION + _AAD)
        return base64.urlsafe_b64encode(_VERSION + nonce + sealed).rstrip(b"=").decode("ascii")

    def unseal(self, value: str) -> str | None:
        """The sealed text, or None (with one warning) for a value this key did not seal."""
        text = self.try_unseal(value)
        if text is None:
            _log.warning("encrypted_content_rejected", reason="not sealed by this server", chars=len(value))
        return text

    def try_unseal(self, value: str) -> str | None:
        """Like :meth:`unseal` but silent: for callers that have another reading to fall back on."""
        try:
            raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        except (binascii.Error, ValueError):
            return None
        if len(raw) < 1 + _NONCE + 16 or raw[:1] != _VERSION:
            return None
        try:
            plain = self._aead.decrypt(raw[1 : 1 + _NONCE], raw[1 + _NONCE :], _VERSION + _AAD)
        except InvalidTag:
            return None
        try:
            return plain.decode("utf-8")
        except UnicodeDecodeError:
            return None


def _load_or_create_key(path: Path) -> bytes:
    if path.exists():
        return _read_key(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    # O_EXCL: two processes starting at once must not each write their own key.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_key(path)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key.hex() + "\n")
    return key


def _read_key(path: Path) -> bytes:
    try:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (ValueError, UnicodeDecodeError):
        key = b""
    if len(key) != 32:
        raise ValueError(f"{path} does not hold a 32-byte hex key")
    return key
