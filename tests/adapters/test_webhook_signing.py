"""Webhook signatures follow the Standard Webhooks scheme, including its ``whsec_`` secrets."""
import base64
import hashlib
import hmac

from notifications.adapters.webhook import sign, signing_key


def expected(key: bytes, msg_id: str, ts: int, body: bytes) -> str:
    return "v1," + base64.b64encode(hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()).decode()


def test_whsec_secret_keys_with_its_decoded_bytes():
    raw = b"\x01\x02secret-key-bytes\xff"
    secret = "whsec_" + base64.b64encode(raw).decode()
    assert signing_key(secret) == raw
    assert sign(secret, "n:1", 1700000000, b"{}") == expected(raw, "n:1", 1700000000, b"{}")


def test_plain_secret_keys_with_its_utf8_bytes():
    assert sign("plain", "n:1", 1, b"x") == expected(b"plain", "n:1", 1, b"x")


def test_whsec_prefix_with_invalid_base64_falls_back_to_utf8():
    assert signing_key("whsec_not base64!") == b"whsec_not base64!"
