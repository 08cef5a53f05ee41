"""Ed25519 signatures of stored manifests (optional).

`publishing.trusted_keys` lists public keys; the signing key comes from the environment
(`RELFORGE_SIGNING_KEY`: a PEM private key or the base64 of the raw 32-byte key) and is never
printed.  A signature is a detached object beside the manifest (`<key>.sig`, JSON
`{"keyid", "ed25519"}`) over the manifest's exact bytes.  When keys are configured, a stored
manifest without a valid signature by one of them is refused.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from dataclasses import dataclass

from relforge.errors import ConfigError, RefusedError

SIGNING_KEY_ENV = "RELFORGE_SIGNING_KEY"
SIGNATURE_SUFFIX = ".sig"


def keyid(public: bytes) -> str:
    """A short, stable name of a public key (for people and the signature object)."""
    return hashlib.sha256(public).hexdigest()[:16]


def parse_public_key(text: str) -> bytes:
    """The raw 32 bytes of an Ed25519 public key given as base64 (raw) or PEM; ValueError
    with a readable message otherwise (the matrix loader turns it into file:line:col)."""
    text = text.strip()
    if text.startswith("-----BEGIN"):
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            key = serialization.load_pem_public_key(text.encode())
        except ValueError:
            raise ValueError("not a PEM public key") from None
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError("the PEM key is not an Ed25519 key")
        return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise ValueError(
            f"{text[:60]!r} is not an Ed25519 public key (base64 of its 32 raw bytes, or PEM)"
        )
    return raw


@dataclass(frozen=True, kw_only=True)
class Trust:
    """Who may vouch for a stored manifest: trusted public keys (empty: signatures are not
    required) and the key this run signs with (None: it signs nothing)."""

    keys: tuple[bytes, ...] = ()
    signing_key: bytes | None = None  # raw 32-byte private key; never printed

    @property
    def required(self) -> bool:
        return bool(self.keys)

    def sign(self, data: bytes) -> bytes | None:
        """The signature object for `data`, or None when this run has no signing key."""
        if self.signing_key is None:
            return None
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        private = Ed25519PrivateKey.from_private_bytes(self.signing_key)
        public = private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        body = {
            "keyid": keyid(public),
            "ed25519": base64.b64encode(private.sign(data)).decode("ascii"),
        }
        return (json.dumps(body, sort_keys=True) + "\n").encode()

    def check(self, data: bytes, signature: bytes | None, where: str) -> None:
        """Refuse `data` (a stored manifest at `where`) unless a trusted key signed it."""
        if not self.keys:
            return
        if signature is None:
            raise RefusedError(
                f"{where} is not signed, and publishing.trusted_keys requires a signature",
                hint="publish or promote with RELFORGE_SIGNING_KEY set to a trusted key",
            )
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            body = json.loads(signature)
            raw = base64.b64decode(body["ed25519"], validate=True)
            named = str(body["keyid"])
        except (ValueError, KeyError, TypeError, binascii.Error):
            raise RefusedError(
                f"{where}{SIGNATURE_SUFFIX} is not a relforge signature",
                hint="the signature object was changed outside relforge",
            ) from None
        for public in self.keys:
            try:
                Ed25519PublicKey.from_public_bytes(public).verify(raw, data)
                return
            except (InvalidSignature, ValueError):
                continue
        raise RefusedError(
            f"{where}: its signature (key {named}) is not valid for any key of "
            "publishing.trusted_keys",
            hint="the manifest or its signature was changed, or it was signed by an untrusted key",
        )


def trust_from(keys: tuple[str, ...]) -> Trust:
    """The trust of a run: `keys` from publishing.trusted_keys and the signing key from the
    environment; a signing key that no trusted key matches is a configuration error."""
    public = tuple(parse_public_key(k) for k in keys)
    text = os.environ.get(SIGNING_KEY_ENV, "").strip()
    if not text:
        return Trust(keys=public)
    private = _private_key(text)
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    mine = (
        Ed25519PrivateKey.from_private_bytes(private)
        .public_key()
        .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )
    if public and mine not in public:
        raise ConfigError(
            f"the key in {SIGNING_KEY_ENV} (keyid {keyid(mine)}) is not one of "
            "publishing.trusted_keys; what it signs would be refused",
            key=SIGNING_KEY_ENV,
            hint="add its public key to publishing.trusted_keys, or use a trusted key",
        )
    return Trust(keys=public, signing_key=private)


def _private_key(text: str) -> bytes:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    bad = ConfigError(
        "is not an Ed25519 private key (PEM, or the base64 of its 32 raw bytes); its value "
        "is not shown",
        key=SIGNING_KEY_ENV,
    )
    if text.startswith("-----BEGIN"):
        try:
            key = serialization.load_pem_private_key(text.encode(), password=None)
        except (ValueError, TypeError):
            raise bad from None
        if not isinstance(key, Ed25519PrivateKey):
            raise bad
        return key.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise bad from None
    if len(raw) != 32:
        raise bad
    return raw


def require_signer(trust: Trust, command: str) -> None:
    """With trusted keys configured, a run that stores manifests must be able to sign them."""
    if trust.required and trust.signing_key is None:
        raise ConfigError(
            f"publishing.trusted_keys is set, so the manifests {command} stores must be "
            f"signed, and {SIGNING_KEY_ENV} is not set",
            key=SIGNING_KEY_ENV,
            hint="set it (PEM or base64 of the raw Ed25519 private key) in the environment",
        )
