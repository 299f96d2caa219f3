#!/usr/bin/env python3
"""Writes distinct, genuine App Store Server Notifications V2 webhook bodies signed under the
project's test PKI (TestVectors/pki), one JSON body per line: each a SUBSCRIBED notification
with its own notificationUUID, nested transaction and renewal info (three ES256 signatures).

For the crash test and the benchmark; needs the `cryptography` package (Debian:
python3-cryptography).

    make_notifications.py COUNT OUTPUT [--seed N]
"""
import argparse
import base64
import json
import pathlib
import random
import uuid

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

ROOT = pathlib.Path(__file__).resolve().parents[2]
PKI = ROOT / "TestVectors" / "pki"
BUNDLE_ID = "com.receiptkit.example"
PRODUCT_ID = "com.receiptkit.example.premium.monthly"
T0 = 1748779200000  # 2025-06-01T12:00:00Z, inside the test PKI's validity
DAY = 86_400_000


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Signer:
    def __init__(self):
        self.key = serialization.load_pem_private_key((PKI / "leaf.key").read_bytes(), password=None)
        x5c = [base64.b64encode((PKI / name).read_bytes()).decode() for name in ("leaf.der", "intermediate.der", "root.der")]
        self.header = b64url(json.dumps({"alg": "ES256", "x5c": x5c}, separators=(",", ":")).encode())

    def sign(self, payload: dict) -> str:
        signing_input = self.header + "." + b64url(json.dumps(payload, separators=(",", ":")).encode())
        r, s = decode_dss_signature(self.key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return signing_input + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def notification_body(signer: Signer, index: int, rng: random.Random) -> tuple[str, str]:
    """One webhook body and its notificationUUID."""
    original = str(3_000_000_000_000_000 + index)
    signed = T0 + index * 1000
    transaction = {
        "transactionId": original, "originalTransactionId": original, "bundleId": BUNDLE_ID, "productId": PRODUCT_ID,
        "subscriptionGroupIdentifier": "21581234", "purchaseDate": signed, "originalPurchaseDate": signed,
        "expiresDate": signed + 30 * DAY, "quantity": 1, "type": "Auto-Renewable Subscription",
        "inAppOwnershipType": "PURCHASED", "signedDate": signed, "environment": "Sandbox",
        "transactionReason": "PURCHASE", "storefront": "USA", "storefrontId": "143441", "price": 9990, "currency": "USD",
        "appAccountToken": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
    }
    renewal = {
        "originalTransactionId": original, "autoRenewProductId": PRODUCT_ID, "productId": PRODUCT_ID,
        "autoRenewStatus": 1, "signedDate": signed, "environment": "Sandbox", "renewalDate": signed + 30 * DAY,
    }
    notification_uuid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    payload = {
        "notificationType": "SUBSCRIBED", "subtype": "INITIAL_BUY", "notificationUUID": notification_uuid,
        "data": {
            "appAppleId": 1234567890, "bundleId": BUNDLE_ID, "bundleVersion": "42", "environment": "Sandbox",
            "signedTransactionInfo": signer.sign(transaction), "signedRenewalInfo": signer.sign(renewal),
        },
        "version": "2.0", "signedDate": signed,
    }
    return json.dumps({"signedPayload": signer.sign(payload)}, separators=(",", ":")), notification_uuid


def generate(count: int, seed: int = 15) -> list[tuple[str, str]]:
    signer = Signer()
    rng = random.Random(seed)
    return [notification_body(signer, index, rng) for index in range(count)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("count", type=int)
    parser.add_argument("output")
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()
    with open(args.output, "w") as file:
        for body, _ in generate(args.count, args.seed):
            file.write(body + "\n")


if __name__ == "__main__":
    main()
