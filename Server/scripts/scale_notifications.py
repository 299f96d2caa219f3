#!/usr/bin/env python3
"""Writes genuine App Store Server Notifications for Server/scripts/scale.sh: webhook bodies
({"signedPayload": …}), one per line, each a SUBSCRIBED notification of a new subscription with its
nested transaction and renewal info, all three signed ES256 under the project's test PKI
(TestVectors/pki: leaf key, x5c leaf, intermediate, root), as Apple signs them.

Usage: scale_notifications.py PKI_DIR OUT COUNT FIRST_ID BUNDLE_ID APP_APPLE_ID NOW_MS
Needs python3-cryptography (Debian).
"""
import base64
import json
import sys
import uuid

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def main() -> None:
    pki, out, count, first, bundle_id, app_apple_id, now = sys.argv[1:8]
    count, first, now = int(count), int(first), int(now)
    with open(f"{pki}/leaf.key", "rb") as handle:
        key = serialization.load_pem_private_key(handle.read(), password=None)
    chain = []
    for name in ("leaf.der", "intermediate.der", "root.der"):
        with open(f"{pki}/{name}", "rb") as handle:
            chain.append(base64.b64encode(handle.read()).decode())
    header = b64url(json.dumps({"alg": "ES256", "x5c": chain}, separators=(",", ":")).encode())

    def sign(payload: dict) -> str:
        signing_input = header + "." + b64url(json.dumps(payload, separators=(",", ":")).encode())
        r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return signing_input + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))

    month = 30 * 86_400_000
    with open(out, "w") as lines:
        for index in range(count):
            transaction_id = str(first + index)
            signed = now - 1_000 + index % 1_000
            transaction = {
                "transactionId": transaction_id, "originalTransactionId": transaction_id, "bundleId": bundle_id,
                "productId": f"{bundle_id}.premium.monthly", "subscriptionGroupIdentifier": "21581234",
                "purchaseDate": signed - 60_000, "originalPurchaseDate": signed - 60_000, "expiresDate": signed - 60_000 + month,
                "quantity": 1, "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "signedDate": signed,
                "environment": "Production", "transactionReason": "PURCHASE", "storefront": "USA", "storefrontId": "143441",
                "price": 9990, "currency": "USD", "appAccountToken": str(uuid.uuid4()), "webOrderLineItemId": str(first + index + 1),
            }
            renewal = {
                "originalTransactionId": transaction_id, "autoRenewProductId": f"{bundle_id}.premium.monthly",
                "productId": f"{bundle_id}.premium.monthly", "autoRenewStatus": 1, "signedDate": signed,
                "environment": "Production", "recentSubscriptionStartDate": signed - 60_000,
                "renewalDate": signed - 60_000 + month,
            }
            notification = {
                "notificationType": "SUBSCRIBED", "subtype": "INITIAL_BUY", "notificationUUID": str(uuid.uuid4()),
                "version": "2.0", "signedDate": signed,
                "data": {
                    "appAppleId": int(app_apple_id), "bundleId": bundle_id, "bundleVersion": "42", "environment": "Production",
                    "signedTransactionInfo": sign(transaction), "signedRenewalInfo": sign(renewal), "status": 1,
                },
            }
            lines.write(json.dumps({"signedPayload": sign(notification)}) + "\n")


if __name__ == "__main__":
    main()
