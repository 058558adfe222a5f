"""Standard Webhooks signatures (standardwebhooks.com): `v1,<base64 HMAC-SHA256>` per message.

A webhook's secret is never stored: it is HMAC-SHA256(the server's signing key, webhook id),
so the API can show it once at registration and the deliverer can sign with it later, and a
copy of the database holds nothing that signs. Hand-written (a dozen lines of the spec) so the
worker carries no extra dependency; the tests verify with the `standardwebhooks` library.
"""

import base64
import hashlib
import hmac

__all__ = ["SECRET_PREFIX", "signature_headers", "webhook_secret", "webhook_secret_bytes"]

SECRET_PREFIX = "whsec_"


def webhook_secret_bytes(server_key: bytes, webhook_id: str) -> bytes:
    """The webhook's 32-byte signing secret, derived from the server's key."""
    return hmac.new(server_key, webhook_id.encode(), hashlib.sha256).digest()


def webhook_secret(server_key: bytes, webhook_id: str) -> str:
    """The secret as a receiver configures it: `whsec_<base64>`."""
    encoded = base64.b64encode(webhook_secret_bytes(server_key, webhook_id)).decode()
    return SECRET_PREFIX + encoded


def signature_headers(secret: bytes, msg_id: str, timestamp: int, body: str) -> dict[str, str]:
    """webhook-id, webhook-timestamp and webhook-signature for one attempt of a message."""
    signed = f"{msg_id}.{timestamp}.{body}".encode()
    digest = base64.b64encode(hmac.new(secret, signed, hashlib.sha256).digest()).decode()
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": f"v1,{digest}",
    }
