#!/usr/bin/env python3
"""Regenerate ReceiptKit's TestVectors/ from the project's own test PKI.

Run from the repository root:

    python3 scripts/make-test-vectors.py            # reuse TestVectors/pki/*.key if present
    python3 scripts/make-test-vectors.py --new-pki  # throw the keys away and make new ones

Needs only python3 (standard library) and the `openssl` command-line tool (OpenSSL 3.0 or later).
The test PKI, encodings and manifest schema live in scripts/testpki.py, shared with
scripts/make-receipt-vectors.py.

What it writes (see TestVectors/README.md):
  TestVectors/pki/   test CA hierarchy built like Apple's (root -> WWDR-style intermediate -> leaf),
                     defective certificates, test-only private keys, fingerprints.json
  TestVectors/jws/   compact JWS vectors (one per file), manifest.json with the expected verifier
                     output for each, a webhook body, and a mixed batch file with its expectations

Each family of vectors has its own builder function (`BUILDERS` lists them in manifest order).
The structure (file names, manifest entries, expectations other than hashes) is deterministic.
ECDSA signatures are randomised, so signature bytes, certificates and fingerprints change on every
run; expectations that depend on them (fingerprints) are recomputed each time.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Callable

from testpki import (
    EXT_INTER, EXT_INTER_NOT_CA, EXT_INTER_NO_MARKER, EXT_LEAF, EXT_LEAF_CA, EXT_LEAF_KEYENC, EXT_LEAF_NO_KU,
    EXT_LEAF_NO_MARKER, EXT_ROOT, INTER_DATES, LEAF_DATES, OPENSSL, ORG, ROOT_DATES, TV, CertSpec, Manifest,
    TestPKI, b64std, b64u, b64u_decode, chain_record, cjson, encode_ecdsa_sig, finish_self_check, generate,
    iso_day, iso_ms, ms, offer_record, parse_ecdsa_sig, raw_sig, rejected, run, sha256_hex, transaction_record,
    verified_record,
)

JWS = TV / "jws"

# Order of the NIST P-256 group.
P256_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551

# --------------------------------------------------------------------------------------------------
# test PKI (EC, like Apple's App Store PKI)
# --------------------------------------------------------------------------------------------------

SUBJ_ROOT = f"/CN=ReceiptKit Test Root CA - G3/OU=ReceiptKit Test Certification Authority/{ORG}"
SUBJ_INTER = f"/CN=ReceiptKit Test WWDR CA - G6/OU=G6/{ORG}"
SUBJ_INTER_NO_MARKER = f"/CN=ReceiptKit Test WWDR CA - G6 (no marker)/OU=G6/{ORG}"
SUBJ_INTER_NOT_CA = f"/CN=ReceiptKit Test WWDR CA - G6 (not a CA)/OU=G6/{ORG}"
SUBJ_LEAF = f"/CN=ReceiptKit Test Receipt Signing/OU=ReceiptKit Test Developer Relations/{ORG}"
SUBJ_OTHER_LEAF = f"/CN=ReceiptKit Test Receipt Signing (other key)/OU=ReceiptKit Test Developer Relations/{ORG}"
SUBJ_XCODE = "/CN=ReceiptKit Test StoreKit Testing in Xcode/O=ReceiptKit Test StoreKit Testing in Xcode"

# Like Apple's "StoreKit Testing in Xcode" certificate: no key identifiers (OpenSSL 3 adds an SKI unless
# told not to).
EXT_XCODE = """basicConstraints = critical, CA:TRUE, pathlen:0
subjectAltName = email:ReceiptKit Test StoreKit Testing in Xcode
keyUsage = critical, digitalSignature
subjectKeyIdentifier = none
authorityKeyIdentifier = none
"""


def leaf_spec(name: str, key: str = "leaf", issuer: str = "intermediate", ext: str = EXT_LEAF,
              dates: tuple[str, str] = LEAF_DATES, subject: str = SUBJ_LEAF) -> CertSpec:
    """A leaf certificate (ecdsa-with-SHA384 by its issuer)."""
    return CertSpec(name, key, subject, issuer, ext, dates, "sha384")


PKI = TestPKI(
    directory=TV / "pki",
    keys={"root": "EC:P-384", "intermediate": "EC:P-384", "leaf": "EC:P-256", "leaf-p384": "EC:P-384",
          "other-leaf": "EC:P-256", "lookalike-root": "EC:P-384", "intermediate-no-marker": "EC:P-384",
          "intermediate-not-ca": "EC:P-384", "xcode": "EC:P-256"},
    certs=[
        CertSpec("root", "root", SUBJ_ROOT, None, EXT_ROOT, ROOT_DATES, "sha384"),
        CertSpec("intermediate", "intermediate", SUBJ_INTER, "root", EXT_INTER, INTER_DATES, "sha384"),
        leaf_spec("leaf"),
        leaf_spec("leaf-no-marker", ext=EXT_LEAF_NO_MARKER),
        CertSpec("intermediate-no-marker", "intermediate-no-marker", SUBJ_INTER_NO_MARKER, "root",
                 EXT_INTER_NO_MARKER, INTER_DATES, "sha384"),
        leaf_spec("leaf-under-intermediate-no-marker", issuer="intermediate-no-marker"),
        leaf_spec("leaf-ca", ext=EXT_LEAF_CA),
        leaf_spec("leaf-keyusage-keyencipherment", ext=EXT_LEAF_KEYENC),
        leaf_spec("leaf-p384", key="leaf-p384"),
        CertSpec("intermediate-not-ca", "intermediate-not-ca", SUBJ_INTER_NOT_CA, "root", EXT_INTER_NOT_CA,
                 INTER_DATES, "sha384"),
        leaf_spec("leaf-under-intermediate-not-ca", issuer="intermediate-not-ca"),
        leaf_spec("leaf-expired", dates=("2022-01-01", "2023-01-01")),
        leaf_spec("leaf-not-yet-valid", dates=("2030-01-01", "2032-01-01")),
        leaf_spec("leaf-no-keyusage", ext=EXT_LEAF_NO_KU),
        CertSpec("lookalike-root", "lookalike-root", SUBJ_ROOT, None, EXT_ROOT, ROOT_DATES, "sha384"),
        CertSpec("root-sibling", "root", SUBJ_ROOT, None, EXT_ROOT, ("2019-06-01", "2044-06-01"), "sha384"),
        leaf_spec("other-leaf", key="other-leaf", subject=SUBJ_OTHER_LEAF),
        CertSpec("xcode", "xcode", SUBJ_XCODE, None, EXT_XCODE, ("2024-01-01", "2027-01-01"), "sha256"),
    ],
    title="test PKI",
    generator="make-test-vectors.py",
    serial_bytes=12,
    default_md="sha384",
    fingerprinted=("root", "lookalike-root", "root-sibling", "xcode"),
)


# --------------------------------------------------------------------------------------------------
# ECDSA / JWS
# --------------------------------------------------------------------------------------------------


def ecdsa_sign(key: str, message: bytes) -> tuple[int, int]:
    """(r, s) of an ECDSA/SHA-256 signature over `message` by test key `key`."""
    der = run([OPENSSL, "dgst", "-sha256", "-sign", str(PKI.key_path(key))], data=message).stdout
    return parse_ecdsa_sig(der)


def sign_segments(header_b64: str, payload_b64: str, key: str = "leaf",
                  transform: Callable[[int, int], bytes] | None = None) -> str:
    """Sign ascii(header_b64 + '.' + payload_b64) exactly as given; transform(r, s) -> signature bytes."""
    r, s = ecdsa_sign(key, (header_b64 + "." + payload_b64).encode("ascii"))
    sig = transform(r, s) if transform else raw_sig(r, s)
    return f"{header_b64}.{payload_b64}.{b64u(sig)}"


def make_jws(header: object, payload: object, key: str = "leaf",
             transform: Callable[[int, int], bytes] | None = None) -> str:
    """A compact JWS; header and payload are JSON values, or bytes used as they are."""
    h = header if isinstance(header, bytes) else cjson(header)
    p = payload if isinstance(payload, bytes) else cjson(payload)
    return sign_segments(b64u(h), b64u(p), key, transform)


def x5c(*names: str) -> list[str]:
    """The x5c member for these certificates."""
    return [b64std(PKI.der[n]) for n in names]


CHAIN = ("leaf", "intermediate", "root")


def header(chain: tuple[str, ...] = CHAIN, **extra: object) -> dict:
    """{"alg":"ES256","x5c":[...]} plus `extra` members."""
    h = {"alg": "ES256", "x5c": x5c(*chain)}
    h.update(extra)
    return h


def leaf_chain(leaf: str, intermediate: str = "intermediate") -> tuple[str, str, str]:
    """The x5c names [leaf, intermediate, root]."""
    return (leaf, intermediate, "root")


def xcode_header() -> dict:
    """The header Xcode's StoreKit Testing writes: kid, typ, one self-signed certificate."""
    return {"alg": "ES256", "kid": "Apple_Xcode_Key", "typ": "JWT", "x5c": x5c("xcode")}


# --------------------------------------------------------------------------------------------------
# payloads (values modelled on Apple's App Store Server API documentation and libraries)
# --------------------------------------------------------------------------------------------------

BUNDLE = "com.receiptkit.example"
APP_APPLE_ID = 1234567890
SIGNED_MS = 1748779200123  # 2025-06-01T12:00:00.123Z
assert iso_ms(SIGNED_MS) == "2025-06-01T12:00:00.123Z"

ADVANCED_COMMERCE_TX = {
    "descriptors": {"description": "Premium Plan", "displayName": "Premium"},
    "estimatedTax": 1500,
    "items": [{
        "SKU": "com.receiptkit.example.sku.premium",
        "description": "Premium feature",
        "displayName": "Premium Feature",
        "price": 9990,
        "refunds": [{"refundAmount": 5000, "refundDate": ms("2025-06-01T11:59:00.000Z"),
                     "refundReason": "FULFILLMENT_ISSUE", "refundType": "PRORATED"}],
        "revocationDate": ms("2025-06-01T11:59:00.000Z"),
    }],
    "period": "P1M",
    "requestReferenceId": "8c4e0b1a-3c3f-4a4e-9a53-1f6f1d8a2b10",
    "taxCode": "C003-00-2",
    "taxExclusivePrice": 8490,
    "taxRate": "0.15",
}

TX_AUTO = {
    "transactionId": "2000000951234567",
    "originalTransactionId": "2000000901234567",
    "webOrderLineItemId": "2000000098765432",
    "bundleId": BUNDLE,
    "productId": "com.receiptkit.example.premium.monthly",
    "subscriptionGroupIdentifier": "21581234",
    "purchaseDate": ms("2025-05-20T08:15:30.000Z"),
    "originalPurchaseDate": ms("2025-03-20T08:15:30.000Z"),
    "expiresDate": ms("2025-06-20T08:15:30.000Z"),
    "quantity": 1,
    "type": "Auto-Renewable Subscription",
    "appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138",
    "inAppOwnershipType": "PURCHASED",
    "signedDate": SIGNED_MS,
    "revocationReason": 1,
    "revocationDate": ms("2025-06-01T11:59:00.000Z"),
    "isUpgraded": True,
    "offerType": 2,
    "offerIdentifier": "com.receiptkit.example.promo.spring",
    "environment": "Sandbox",
    "transactionReason": "RENEWAL",
    "storefront": "USA",
    "storefrontId": "143441",
    "price": 9990,
    "currency": "USD",
    "offerDiscountType": "PAY_AS_YOU_GO",
    "appTransactionId": "704289572311347890",
    "offerPeriod": "P3M",
    "revocationType": "REFUND_PRORATED",
    "revocationPercentage": 50000,
    "advancedCommerceInfo": ADVANCED_COMMERCE_TX,
    "billingPlanType": "MONTHLY",
    "commitmentInfo": {
        "billingPeriodNumber": 3,
        "commitmentExpiresDate": ms("2026-03-20T08:15:30.000Z"),
        "commitmentPrice": 119880,
        "totalBillingPeriods": 12,
    },
}

TX_CONSUMABLE = {
    "transactionId": "2000000951234999",
    "originalTransactionId": "2000000951234999",
    "bundleId": BUNDLE,
    "productId": "com.receiptkit.example.coins.100",
    "purchaseDate": ms("2025-06-01T11:58:12.000Z"),
    "originalPurchaseDate": ms("2025-06-01T11:58:12.000Z"),
    "quantity": 3,
    "type": "Consumable",
    "inAppOwnershipType": "PURCHASED",
    "signedDate": SIGNED_MS,
    "environment": "Production",
    "transactionReason": "PURCHASE",
    "storefront": "JPN",
    "storefrontId": "143462",
    "price": 480000,
    "currency": "JPY",
    "appTransactionId": "704289572311347891",
}

TX_NON_CONSUMABLE = {
    "transactionId": "2000000951235111",
    "originalTransactionId": "2000000951235000",
    "bundleId": BUNDLE,
    "productId": "com.receiptkit.example.lifetime",
    "purchaseDate": ms("2025-05-30T17:00:00.000Z"),
    "originalPurchaseDate": ms("2025-05-28T16:45:10.000Z"),
    "quantity": 1,
    "type": "Non-Consumable",
    "appAccountToken": "0b1f6a3e-6c1d-4c55-8d3b-5a7a4b2d9e01",
    "inAppOwnershipType": "FAMILY_SHARED",
    "signedDate": SIGNED_MS,
    "revocationReason": 0,
    "revocationDate": ms("2025-06-01T10:00:00.000Z"),
    "offerType": 3,
    "offerIdentifier": "SUMMER25",
    "offerDiscountType": "ONE_TIME",
    "environment": "Production",
    "transactionReason": "PURCHASE",
    "storefront": "DEU",
    "storefrontId": "143443",
    "price": 4990,
    "currency": "EUR",
    "appTransactionId": "704289572311347892",
}

TX_NON_RENEWING = {
    "transactionId": "2000000951235222",
    "originalTransactionId": "2000000951235222",
    "bundleId": BUNDLE,
    "productId": "com.receiptkit.example.season.pass",
    "purchaseDate": ms("2025-05-31T23:59:59.999Z"),
    "originalPurchaseDate": ms("2025-05-31T23:59:59.999Z"),
    "quantity": 1,
    "type": "Non-Renewing Subscription",
    "inAppOwnershipType": "PURCHASED",
    "signedDate": SIGNED_MS,
    "environment": "Sandbox",
    "transactionReason": "PURCHASE",
    "storefront": "GBR",
    "storefrontId": "143444",
    "price": 2990,
    "currency": "GBP",
    "appTransactionId": "704289572311347893",
}

TX_UNKNOWN = {
    "transactionId": "2000000951235333",
    "originalTransactionId": "2000000951235333",
    "webOrderLineItemId": "2000000098765999",
    "bundleId": BUNDLE,
    "productId": "com.receiptkit.example.fancy",
    "purchaseDate": ms("2025-06-01T11:00:00.000Z"),
    "originalPurchaseDate": ms("2025-06-01T11:00:00.000Z"),
    "quantity": 2,
    "type": "Fancy New Type",
    "inAppOwnershipType": "NEW_OWNERSHIP",
    "signedDate": SIGNED_MS,
    "revocationReason": 7,
    "revocationDate": ms("2025-06-01T11:30:00.000Z"),
    "isUpgraded": False,
    "offerType": 9,
    "offerIdentifier": "future.offer",
    "offerDiscountType": "NEW_DISCOUNT",
    "offerPeriod": "P2W",
    "environment": "Sandbox",
    "transactionReason": "GIFT",
    "storefront": "CAN",
    "storefrontId": "143455",
    "price": 0,
    "appTransactionId": "704289572311347894",
}

TX_FRACTIONAL = {
    "transactionId": "2000000951235444",
    "originalTransactionId": "2000000901235444",
    "webOrderLineItemId": "2000000098766000",
    "bundleId": BUNDLE,
    "productId": "com.receiptkit.example.premium.yearly",
    "subscriptionGroupIdentifier": "21581234",
    "purchaseDate": 1748779100049.7297,
    "originalPurchaseDate": 1717243100049.7297,
    "expiresDate": 1780315100049.9,
    "quantity": 1,
    "type": "Auto-Renewable Subscription",
    "inAppOwnershipType": "PURCHASED",
    "signedDate": 1748779200123.7297,
    "offerType": 4,
    "offerIdentifier": "com.receiptkit.example.winback",
    "offerDiscountType": "FREE_TRIAL",
    "offerPeriod": "P1M",
    "environment": "Sandbox",
    "transactionReason": "PURCHASE",
    "storefront": "AUS",
    "storefrontId": "143460",
    "price": 0,
    "currency": "AUD",
    "appTransactionId": "704289572311347895",
}

# An offer where only the discount type and period are given (offerType / offerIdentifier absent).
TX_NO_KEYUSAGE = dict(TX_AUTO)
for _k in ("offerType", "offerIdentifier", "revocationReason", "revocationDate", "revocationType",
           "revocationPercentage", "isUpgraded"):
    TX_NO_KEYUSAGE.pop(_k)
TX_NO_KEYUSAGE.update({"transactionId": "2000000951235555", "offerDiscountType": "PAY_UP_FRONT",
                       "offerPeriod": "P1W", "transactionReason": "PURCHASE"})

TX_INITIAL_BUY = {
    "transactionId": "2000000951236000",
    "originalTransactionId": "2000000951236000",
    "webOrderLineItemId": "2000000098767000",
    "bundleId": BUNDLE,
    "productId": "com.receiptkit.example.premium.monthly",
    "subscriptionGroupIdentifier": "21581234",
    "purchaseDate": ms("2025-06-01T11:59:58.000Z"),
    "originalPurchaseDate": ms("2025-06-01T11:59:58.000Z"),
    "expiresDate": ms("2025-06-08T11:59:58.000Z"),
    "quantity": 1,
    "type": "Auto-Renewable Subscription",
    "appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138",
    "inAppOwnershipType": "PURCHASED",
    "signedDate": ms("2025-06-01T12:00:00.045Z"),
    "offerType": 1,
    "offerDiscountType": "FREE_TRIAL",
    "offerPeriod": "P1W",
    "environment": "Sandbox",
    "transactionReason": "PURCHASE",
    "storefront": "USA",
    "storefrontId": "143441",
    "price": 0,
    "currency": "USD",
    "appTransactionId": "704289572311347890",
}

TX_XCODE = {
    "inAppOwnershipType": "PURCHASED",
    "purchaseDate": 1748779100049.7297,
    "subscriptionGroupIdentifier": "6F3A93AB",
    "signedDate": 1748779200056.485,
    "originalPurchaseDate": 1748779100049.7297,
    "isUpgraded": False,
    "deviceVerification": "sGDnpg+ozb8uwDSuCDZ2oVZo1CKrbB8ujR8VxCxhykRwyBIK6x6XCyERm8yWrzE8",
    "offerType": 1,
    "quantity": 1,
    "transactionId": "0",
    "type": "Auto-Renewable Subscription",
    "transactionReason": "PURCHASE",
    "productId": "pass.premium",
    "expiresDate": 1751371100049.7297,
    "environment": "Xcode",
    "storefrontId": "143441",
    "originalTransactionId": "0",
    "bundleId": BUNDLE,
    "deviceVerificationNonce": "7edea87d-98f0-42d0-9682-49ca81022f73",
    "webOrderLineItemId": "0",
    "storefront": "USA",
}

RENEWAL_FULL = {
    "expirationIntent": 1,
    "originalTransactionId": "2000000901234567",
    "autoRenewProductId": "com.receiptkit.example.premium.yearly",
    "productId": "com.receiptkit.example.premium.monthly",
    "autoRenewStatus": 1,
    "isInBillingRetryPeriod": True,
    "priceIncreaseStatus": 0,
    "gracePeriodExpiresDate": ms("2025-06-21T08:15:30.000Z"),
    "offerType": 2,
    "offerIdentifier": "com.receiptkit.example.promo.spring",
    "signedDate": SIGNED_MS,
    "environment": "Sandbox",
    "recentSubscriptionStartDate": ms("2025-03-20T08:15:30.000Z"),
    "renewalDate": ms("2025-06-20T08:15:30.000Z"),
    "renewalPrice": 99990,
    "currency": "USD",
    "offerDiscountType": "PAY_AS_YOU_GO",
    "eligibleWinBackOfferIds": ["com.receiptkit.example.winback", "com.receiptkit.example.winback.2"],
    "appTransactionId": "704289572311347890",
    "offerPeriod": "P3M",
    "appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138",
    "advancedCommerceInfo": {
        "consistencyToken": "token-abc-123",
        "descriptors": {"description": "Premium Plan", "displayName": "Premium"},
        "items": [{
            "SKU": "com.receiptkit.example.sku.premium",
            "description": "Premium feature",
            "displayName": "Premium Feature",
            "price": 9990,
            "priceIncreaseInfo": {"dependentSKUs": ["com.receiptkit.example.sku.1"], "price": 12990,
                                  "status": "PENDING"},
        }],
        "period": "P1M",
        "requestReferenceId": "8c4e0b1a-3c3f-4a4e-9a53-1f6f1d8a2b11",
        "taxCode": "C003-00-2",
    },
    "commitmentInfo": {
        "commitmentAutoRenewProductId": "com.receiptkit.example.premium.commitment",
        "commitmentAutoRenewStatus": 1,
        "commitmentRenewalBillingPlanType": "MONTHLY",
        "commitmentRenewalDate": ms("2026-03-20T08:15:30.000Z"),
        "commitmentRenewalPrice": 9990,
    },
    "renewalBillingPlanType": "MONTHLY",
}

RENEWAL_MINIMAL = {"environment": "Sandbox", "signedDate": SIGNED_MS}

RENEWAL_FOR_NOTIFICATION = {
    "originalTransactionId": "2000000951236000",
    "autoRenewProductId": "com.receiptkit.example.premium.monthly",
    "productId": "com.receiptkit.example.premium.monthly",
    "autoRenewStatus": 1,
    "signedDate": ms("2025-06-01T12:00:00.045Z"),
    "environment": "Sandbox",
    "recentSubscriptionStartDate": ms("2025-06-01T11:59:58.000Z"),
    "renewalDate": ms("2025-06-08T11:59:58.000Z"),
    "renewalPrice": 9990,
    "currency": "USD",
    "appTransactionId": "704289572311347890",
    "appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138",
}

RENEWAL_CONSUMPTION = {
    "originalTransactionId": "2000000951234999",
    "productId": "com.receiptkit.example.coins.100",
    "autoRenewStatus": 0,
    "signedDate": SIGNED_MS,
    "environment": "Production",
}

APP_TX = {
    "receiptType": "Production",
    "appAppleId": APP_APPLE_ID,
    "bundleId": BUNDLE,
    "applicationVersion": "42",
    "versionExternalIdentifier": 868465210,
    "receiptCreationDate": ms("2025-06-01T12:00:00.456Z"),
    "originalPurchaseDate": ms("2024-11-02T18:04:05.000Z"),
    "originalApplicationVersion": "17",
    "deviceVerification": "u0rAPGtTUvC/0KJH7P+eIt8ZQyQikTDM/3jfmnH8S1xJOjTVPQ10PRLAfPH3ecVg",
    "deviceVerificationNonce": "48ccfa42-7431-4f22-9908-7e88983e105a",
    "preorderDate": ms("2024-10-30T07:00:00.000Z"),
    "appTransactionId": "704289572311347890",
    "originalPlatform": "iOS",
}

APP_TX_SANDBOX = dict(APP_TX, receiptType="Sandbox", appAppleId=0, versionExternalIdentifier=0,
                      receiptCreationDate=ms("2025-06-01T11:59:00.789Z"), applicationVersion="43")
APP_TX_SANDBOX.pop("preorderDate")

REALTIME = {
    "originalTransactionId": "2000000901234567",
    "appAppleId": APP_APPLE_ID,
    "productId": "com.receiptkit.example.premium.monthly",
    "userLocale": "en-US",
    "requestIdentifier": "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9",
    "environment": "Sandbox",
    "signedDate": SIGNED_MS,
}

UUID_SUBSCRIBED = "002e14d5-51f5-4503-b5a8-c3a1af68eb20"
UUID_SUMMARY = "b7a2f6b0-6c51-4f3b-9a51-7f4a3a0d2c11"
UUID_EXT = "c1e8d2a4-1f0b-4c9e-8d77-3a5b2e6f9012"
UUID_EXT_SANDBOX = "c1e8d2a4-1f0b-4c9e-8d77-3a5b2e6f9013"
UUID_RESCIND = "f3d1a9c2-7b64-4e0a-b5c8-91e2d3f4a5b6"
UUID_CONSUMPTION = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
UUID_TEST = "4f0e9d8c-7b6a-4594-8372-61504f3e2d1c"


# --------------------------------------------------------------------------------------------------
# expectations (an independent oracle for the verifier's normalized output)
# --------------------------------------------------------------------------------------------------

PRODUCT_TYPES = {"Auto-Renewable Subscription": "auto_renewable_subscription",
                 "Non-Renewing Subscription": "non_renewing_subscription",
                 "Consumable": "consumable", "Non-Consumable": "non_consumable"}
REVOCATION_REASONS = {0: "refunded_for_other_reason", 1: "refunded_due_to_issue"}
OWNERSHIP = {"PURCHASED": "purchased", "FAMILY_SHARED": "family_shared"}
REASONS = {"PURCHASE": "purchase", "RENEWAL": "renewal"}
OFFER_TYPES = {1: "introductory", 2: "promotional", 3: "offer_code", 4: "win_back"}
DISCOUNT_TYPES = {"FREE_TRIAL": "free_trial", "PAY_AS_YOU_GO": "pay_as_you_go",
                  "PAY_UP_FRONT": "pay_up_front", "ONE_TIME": "one_time"}


def mapped(value: object, table: dict) -> object:
    """Apple's raw enum value -> the verifier's name; unknown values kept raw (integers as strings)."""
    if value is None:
        return None
    if value in table:
        return table[value]
    return str(value) if isinstance(value, int) else value


def normalize_transaction(p: dict) -> dict:
    """The verifier's full normalized transaction for a JWSTransactionDecodedPayload."""
    offer = None
    if any(k in p for k in ("offerType", "offerIdentifier", "offerDiscountType", "offerPeriod")):
        offer = offer_record(mapped(p.get("offerType"), OFFER_TYPES), p.get("offerIdentifier"),
                             mapped(p.get("offerDiscountType"), DISCOUNT_TYPES), p.get("offerPeriod"))
    price = None
    if "price" in p:
        price = {"milliunits": p["price"], "currency": p.get("currency")}
    return transaction_record(
        "jws",
        environment=p.get("environment"),
        bundle_id=p.get("bundleId"),
        product_id=p.get("productId"),
        product_type=mapped(p.get("type"), PRODUCT_TYPES),
        transaction_id=p.get("transactionId"),
        original_transaction_id=p.get("originalTransactionId"),
        web_order_line_item_id=p.get("webOrderLineItemId"),
        subscription_group_id=p.get("subscriptionGroupIdentifier"),
        quantity=p.get("quantity"),
        purchase_date=iso_ms(p.get("purchaseDate")),
        original_purchase_date=iso_ms(p.get("originalPurchaseDate")),
        expires_date=iso_ms(p.get("expiresDate")),
        revocation_date=iso_ms(p.get("revocationDate")),
        revocation_reason=mapped(p.get("revocationReason"), REVOCATION_REASONS),
        is_upgraded=p.get("isUpgraded"),
        ownership_type=mapped(p.get("inAppOwnershipType"), OWNERSHIP),
        transaction_reason=mapped(p.get("transactionReason"), REASONS),
        offer=offer,
        price=price,
        storefront=p.get("storefront"),
        storefront_id=p.get("storefrontId"),
        app_account_token=p.get("appAccountToken"),
        app_transaction_id=p.get("appTransactionId"),
        signed_date=iso_ms(p.get("signedDate")),
    )


def renewal_subset(p: dict) -> dict:
    """The key members of a renewal_info record."""
    return {"original_transaction_id": p.get("originalTransactionId"), "product_id": p.get("productId"),
            "auto_renew_status": p.get("autoRenewStatus")}


def app_subset(p: dict) -> dict:
    """The key members of an app record."""
    return {"bundle_id": p.get("bundleId"), "application_version": p.get("applicationVersion"),
            "receipt_type": p.get("receiptType")}


def chain_expect(leaf: str = "leaf", root: str = "root") -> dict:
    """The `chain` member for this leaf and anchor."""
    return chain_record(PKI, leaf, root)


def verified(kind: str, environment: str, validated_at: str | None, transactions: list,
             chain: dict | None = None, **extra: object) -> dict:
    """A verified record; the chain defaults to leaf -> root."""
    return verified_record(kind, environment, validated_at, chain if chain is not None else chain_expect(),
                           transactions, **extra)


def tx_expect(p: dict, chain: dict | None = None) -> dict:
    """The record of a verified transaction: validated at its signedDate, full normalized transaction."""
    return verified("transaction", p["environment"], iso_ms(p["signedDate"]), [normalize_transaction(p)], chain)


def notification_expect(type_: str, subtype: str | None, uuid: str, environment: str,
                        transactions: list | None = None, **extra: object) -> dict:
    """The record of a verified notification signed at SIGNED_MS."""
    return verified("notification", environment, iso_ms(SIGNED_MS), transactions or [],
                    notification={"type": type_, "subtype": subtype, "uuid": uuid}, **extra)


def subscribed_expect() -> dict:
    """The record of notification-subscribed (also its webhook body and its claims variant)."""
    return notification_expect("SUBSCRIBED", "INITIAL_BUY", UUID_SUBSCRIBED, "Sandbox",
                               [normalize_transaction(TX_INITIAL_BUY)],
                               renewal_info=renewal_subset(RENEWAL_FOR_NOTIFICATION))


def notification(type_: str, uuid: str, subtype: str | None = None, *, data: dict | None = None,
                 app_data: dict | None = None, **after: object) -> dict:
    """A V2 notification payload (version 2.0, signed at SIGNED_MS); `after` members follow signedDate."""
    n: dict = {"notificationType": type_}
    if subtype is not None:
        n["subtype"] = subtype
    n["notificationUUID"] = uuid
    if data is not None:
        n["data"] = data
    if app_data is not None:
        n["appData"] = app_data
    n.update(version="2.0", signedDate=SIGNED_MS)
    n.update(after)
    return n


def subscribed_notification() -> dict:
    """SUBSCRIBED/INITIAL_BUY with a signed transaction and renewal info in its data."""
    return notification("SUBSCRIBED", UUID_SUBSCRIBED, "INITIAL_BUY", data={
        "appAppleId": APP_APPLE_ID,
        "bundleId": BUNDLE,
        "bundleVersion": "42",
        "environment": "Sandbox",
        "signedTransactionInfo": make_jws(header(), TX_INITIAL_BUY),
        "signedRenewalInfo": make_jws(header(), RENEWAL_FOR_NOTIFICATION),
        "status": 1,
    })


def external_purchase_token(uuid: str, purchase_id: str) -> dict:
    """EXTERNAL_PURCHASE_TOKEN/UNREPORTED for this externalPurchaseId."""
    return notification("EXTERNAL_PURCHASE_TOKEN", uuid, "UNREPORTED", externalPurchaseToken={
        "externalPurchaseId": purchase_id,
        "tokenCreationDate": ms("2025-06-01T11:00:00.000Z"),
        "appAppleId": APP_APPLE_ID,
        "bundleId": BUNDLE,
    })


def webhook_body(token: str) -> str:
    """An App Store Server Notifications V2 webhook body carrying `token`."""
    return json.dumps({"signedPayload": token}, separators=(",", ":"))


def root_pin_args() -> list[str]:
    """`--pin-sha256` of the test root."""
    return ["--pin-sha256", sha256_hex(PKI.der["root"])]


# --------------------------------------------------------------------------------------------------
# vector collection
# --------------------------------------------------------------------------------------------------

AUTO_FILE = "jws/transaction-auto-renewable.jws"
SUBSCRIBED_FILE = "jws/notification-subscribed.jws"
EXT_SANDBOX_FILE = "jws/notification-external-purchase-token-sandbox.jws"
TEST_FILE = "jws/notification-test.jws"
APP_FILE = "jws/app-transaction.jws"
XCODE_FILE = "jws/xcode-transaction.jws"


class Vectors(Manifest):
    """jws/manifest.json, the JWS files it names, and the signatures the self-check verifies."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: dict[str, str] = {}  # name -> token, for later vectors and sanity checks
        self.checks: list[tuple[str, str, str | None, bool]] = []  # (name, token, leaf cert, must verify)

    def add(self, name: str, expected: dict, description: str, token: str | None = None,
            args: list[str] | None = None, file: str | None = None, sig_ok: bool | None = None,
            sig_cert: str | None = None) -> None:
        """Add a vector: `token` is written to jws/<name>.jws, or `file` names an existing input.

        `args` default to `--root root.der`; `sig_ok` asks the self-check to verify the signature
        against `sig_cert` (default: the certificate in x5c[0]) and expect that outcome.
        """
        if token is not None:
            assert file is None
            file = f"jws/{name}.jws"
            (TV / file).write_text(token + "\n")
            self.tokens[name] = token
        assert file is not None
        self.entry(name, file, PKI.root_args() if args is None else args, expected, description)
        if token is not None and sig_ok is not None:
            self.checks.append((name, token, sig_cert, sig_ok))

    def signed(self, name: str, expected: dict, description: str, payload: object,
               chain: tuple[str, ...] = CHAIN, args: list[str] | None = None) -> str:
        """A JWS over `payload` with x5c `chain`, signed by leaf.key; its signature must verify."""
        token = make_jws(header(chain), payload)
        sig_cert = None if chain[0] == "leaf" else chain[0]
        self.add(name, expected, description, token=token, args=args, sig_ok=True, sig_cert=sig_cert)
        return token

    def rejects(self, code: str, label: str, description: str, **kwargs: object) -> None:
        """Add `<code>-<label>`, expected to be rejected with `code` (keywords as for `add`)."""
        self.add(f"{code}-{label}", rejected(code), description, **kwargs)


def tune_payload(base: dict, condition: Callable[[str], bool], filler: str = "x") -> tuple[dict, str]:
    """Add an ignored member "note" of growing length until condition(payload_b64) holds."""
    for n in range(256):
        p = dict(base, note=filler * n)
        pb = b64u(cjson(p))
        if condition(pb):
            return p, pb
    raise SystemExit("tune_payload: no payload matched")


B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

# --------------------------------------------------------------------------------------------------
# builders: valid inputs
# --------------------------------------------------------------------------------------------------

TRANSACTIONS = [
    ("transaction-auto-renewable", TX_AUTO,
     "Auto-renewable subscription transaction with every field Apple defines (revoked, upgraded, "
     "promotional offer, advancedCommerceInfo/billingPlanType/commitmentInfo which are ignored), Sandbox."),
    ("transaction-consumable", TX_CONSUMABLE, "Consumable, Production, JPY, quantity 3; no offer, "
     "revocation, expiry, web order line item, subscription group or appAccountToken (all null)."),
    ("transaction-non-consumable", TX_NON_CONSUMABLE, "Non-consumable, family shared, refunded for "
     "another reason (revocationReason 0), offer code with ONE_TIME discount, EUR."),
    ("transaction-non-renewing", TX_NON_RENEWING, "Non-renewing subscription, Sandbox, GBP, no offer."),
    ("transaction-unknown-type", TX_UNKNOWN, "Unknown enum values are kept raw: type 'Fancy New Type', "
     "inAppOwnershipType 'NEW_OWNERSHIP', transactionReason 'GIFT', offerType 9 -> '9', offerDiscountType "
     "'NEW_DISCOUNT', revocationReason 7 -> '7'; isUpgraded false; price 0 with no currency."),
    ("transaction-fractional-dates", TX_FRACTIONAL, "Fractional millisecond dates (e.g. 1748779200123.7297) "
     "are floored to whole milliseconds; win-back offer with FREE_TRIAL."),
]


def build_transactions(v: Vectors) -> None:
    """One transaction per product type and payload shape: each verifies to its full normalized record."""
    for name, payload, description in TRANSACTIONS:
        v.signed(name, tx_expect(payload), description, payload)


def build_transaction_trust_variants(v: Vectors) -> None:
    """The auto-renewable transaction under other signatures, anchors and leaves that must still verify."""
    tok_auto = v.tokens["transaction-auto-renewable"]
    r, s = ecdsa_sign("leaf", tok_auto.rsplit(".", 1)[0].encode())
    high_s = s if s > P256_N // 2 else P256_N - s
    hb, pb, _ = tok_auto.split(".")
    v.add("transaction-high-s", tx_expect(TX_AUTO),
          "Same input as transaction-auto-renewable with a high-S signature (s > n/2, i.e. n - s of a low-S "
          "signature). ECDSA accepts both; must verify.", token=f"{hb}.{pb}.{b64u(raw_sig(r, high_s))}", sig_ok=True)
    v.add("transaction-pinned", tx_expect(TX_AUTO),
          "transaction-auto-renewable trusted through --pin-sha256 of the test root (x5c[2] is the anchor).",
          file=AUTO_FILE, args=root_pin_args())
    v.signed("transaction-root-sibling", tx_expect(TX_AUTO, chain_expect("leaf", "root")),
             "x5c[2] is root-sibling.der (same subject and key as root.der, different serial and validity). With "
             "--root root.der the given root is the anchor and x5c[2] is ignored, so it verifies; chain.root_sha256 "
             "is the anchor's (root.der).", TX_AUTO, chain=("leaf", "intermediate", "root-sibling"))
    v.signed("transaction-leaf-no-keyusage", tx_expect(TX_NO_KEYUSAGE, chain_expect("leaf-no-keyusage")),
             "x5c[0] has no keyUsage extension at all (like Apple's mock leaf): allowed, must verify. Offer with "
             "only offerDiscountType PAY_UP_FRONT and offerPeriod (type and id null).", TX_NO_KEYUSAGE,
             chain=leaf_chain("leaf-no-keyusage"))


def build_renewal_info(v: Vectors) -> None:
    """Renewal info with every field and with the fewest: detected as renewal_info either way."""
    v.signed("renewal-info", verified("renewal_info", "Sandbox", iso_ms(SIGNED_MS), [],
                                      renewal_info=renewal_subset(RENEWAL_FULL)),
             "Renewal info with every field Apple defines (plus advancedCommerceInfo/commitmentInfo, ignored).",
             RENEWAL_FULL)
    v.signed("renewal-info-minimal", verified("renewal_info", "Sandbox", iso_ms(SIGNED_MS), [],
                                              renewal_info=renewal_subset(RENEWAL_MINIMAL)),
             "Renewal info with only environment and signedDate: detected as renewal_info, other members null.",
             RENEWAL_MINIMAL)


def build_notification_subscribed(v: Vectors) -> None:
    """A notification whose data nests a signed transaction and renewal info."""
    v.signed("notification-subscribed", subscribed_expect(),
             "SUBSCRIBED/INITIAL_BUY notification (App Store Server Notifications V2) whose data carries a "
             "signedTransactionInfo and signedRenewalInfo, both JWS signed by the test PKI.",
             subscribed_notification())


def build_notification_summary(v: Vectors) -> None:
    """A notification whose environment comes from its summary object."""
    summary = notification("RENEWAL_EXTENSION", UUID_SUMMARY, "SUMMARY", summary={
        "environment": "Production",
        "appAppleId": APP_APPLE_ID,
        "bundleId": BUNDLE,
        "productId": "com.receiptkit.example.premium.monthly",
        "requestIdentifier": "efb27071-45a4-4aca-9854-2a1e9146f265",
        "storefrontCountryCodes": ["CAN", "USA", "MEX"],
        "succeededCount": 5,
        "failedCount": 2,
    })
    v.signed("notification-summary",
             notification_expect("RENEWAL_EXTENSION", "SUMMARY", UUID_SUMMARY, "Production"),
             "RENEWAL_EXTENSION/SUMMARY notification: environment comes from the summary object.", summary)


def build_notification_external_purchase_tokens(v: Vectors) -> None:
    """External purchase tokens: the environment follows the externalPurchaseId's SANDBOX prefix."""
    v.signed("notification-external-purchase-token",
             notification_expect("EXTERNAL_PURCHASE_TOKEN", "UNREPORTED", UUID_EXT, "Production"),
             "EXTERNAL_PURCHASE_TOKEN/UNREPORTED: externalPurchaseId without the SANDBOX prefix -> Production.",
             external_purchase_token(UUID_EXT, "b2158121-7af9-49d4-9561-1f588205523e"))
    v.signed("notification-external-purchase-token-sandbox",
             notification_expect("EXTERNAL_PURCHASE_TOKEN", "UNREPORTED", UUID_EXT_SANDBOX, "Sandbox"),
             "EXTERNAL_PURCHASE_TOKEN/UNREPORTED: externalPurchaseId starts with 'SANDBOX' -> Sandbox.",
             external_purchase_token(UUID_EXT_SANDBOX, "SANDBOX_b2158121-7af9-49d4-9561-1f588205523e"))


def build_notification_rescind_consent(v: Vectors) -> None:
    """A notification without subtype whose appData nests a signed app transaction."""
    rescind = notification("RESCIND_CONSENT", UUID_RESCIND, app_data={
        "appAppleId": APP_APPLE_ID,
        "bundleId": BUNDLE,
        "environment": "Sandbox",
        "signedAppTransactionInfo": make_jws(header(), APP_TX_SANDBOX),
    })
    v.signed("notification-rescind-consent",
             notification_expect("RESCIND_CONSENT", None, UUID_RESCIND, "Sandbox", app=app_subset(APP_TX_SANDBOX)),
             "RESCIND_CONSENT notification: appData carries a signedAppTransactionInfo (Sandbox app transaction) "
             "signed by the test PKI; no subtype.", rescind)


def build_notification_consumption_request(v: Vectors) -> None:
    """A Production notification with a consumption request reason and nested JWS."""
    consumption = notification("CONSUMPTION_REQUEST", UUID_CONSUMPTION, data={
        "environment": "Production",
        "appAppleId": APP_APPLE_ID,
        "bundleId": BUNDLE,
        "bundleVersion": "42",
        "signedTransactionInfo": make_jws(header(), TX_CONSUMABLE),
        "signedRenewalInfo": make_jws(header(), RENEWAL_CONSUMPTION),
        "status": 1,
        "consumptionRequestReason": "UNINTENDED_PURCHASE",
    })
    v.signed("notification-consumption-request",
             notification_expect("CONSUMPTION_REQUEST", None, UUID_CONSUMPTION, "Production",
                                 [normalize_transaction(TX_CONSUMABLE)],
                                 renewal_info=renewal_subset(RENEWAL_CONSUMPTION)),
             "CONSUMPTION_REQUEST notification with data.consumptionRequestReason, a nested consumable "
             "transaction and renewal info, Production.", consumption)


def build_notification_test(v: Vectors) -> None:
    """A TEST notification: data has no appAppleId."""
    test = notification("TEST", UUID_TEST, data={"bundleId": BUNDLE, "environment": "Sandbox"})
    v.signed("notification-test", notification_expect("TEST", None, UUID_TEST, "Sandbox"),
             "TEST notification: data has only bundleId and environment (no appAppleId, as in Sandbox).", test)


def build_notification_no_signed_date(v: Vectors) -> None:
    """A DID_RENEW notification in the early-2022 shape: no top-level signedDate, notificationVersion
    "2.0" instead of version, data with nested signedTransactionInfo/signedRenewalInfo. It is
    validated at the latest nested signedDate (the renewal info's here), so it verifies at any clock."""
    tx = dict(TX_INITIAL_BUY, signedDate=ms("2024-06-01T12:00:00.000Z"))
    renewal = dict(RENEWAL_FOR_NOTIFICATION, signedDate=ms("2024-06-01T12:01:00.500Z"))
    payload = {
        "notificationType": "DID_RENEW",
        "notificationUUID": "6b9c6f1e-8f2e-4c55-9d7a-2e1f4c3b2a10",
        "notificationVersion": "2.0",
        "data": {"appAppleId": APP_APPLE_ID, "bundleId": BUNDLE, "bundleVersion": "1", "environment": "Sandbox",
                 "signedTransactionInfo": make_jws(header(), tx), "signedRenewalInfo": make_jws(header(), renewal)},
    }
    v.signed("notification-did-renew-no-signed-date", verified(
        "notification", "Sandbox", iso_ms(renewal["signedDate"]), [normalize_transaction(tx)],
        validation_time_source="nested_signed_date",
        notification={"type": "DID_RENEW", "subtype": None, "version": "2.0", "signed_date": None}),
        "Early-2022 DID_RENEW shape: no signedDate, notificationVersion 2.0; validated at the latest nested "
        "signedDate (2024-06-01T12:01:00.500Z), which the record names as validation_time_source.", payload)


def build_app_and_realtime(v: Vectors) -> None:
    """An app transaction (validated at its receiptCreationDate) and a real-time request."""
    v.signed("app-transaction", verified(
        "app_transaction", "Production", iso_ms(APP_TX["receiptCreationDate"]), [], app=app_subset(APP_TX)),
        "App transaction with every field; environment = receiptType, validated_at = receiptCreationDate "
        "(2025-06-01T12:00:00.456Z).", APP_TX)
    v.signed("realtime-request", verified(
        "realtime_request", "Sandbox", iso_ms(SIGNED_MS), [],
        realtime_request={"request_identifier": REALTIME["requestIdentifier"],
                          "original_transaction_id": REALTIME["originalTransactionId"]}),
        "Retention Messaging real-time request payload (userLocale, requestIdentifier).", REALTIME)


def build_xcode_transaction(v: Vectors) -> None:
    """A StoreKit Testing in Xcode transaction: one self-signed certificate, trusted only as --root."""
    v.add("xcode-transaction", verified(
        "transaction", "Xcode", iso_ms(TX_XCODE["signedDate"]), [normalize_transaction(TX_XCODE)],
        chain_expect("xcode", "xcode")),
        "StoreKit Testing in Xcode style: x5c = [xcode.der] only, kid Apple_Xcode_Key, typ JWT, fractional "
        "dates, ids '0'. Verifies only with --root xcode.der.",
        token=make_jws(xcode_header(), TX_XCODE, key="xcode"), args=PKI.root_args("xcode"), sig_ok=True,
        sig_cert="xcode")


def build_option_variants(v: Vectors) -> None:
    """Valid inputs again, under options that match them: the result must not change."""
    auto = tx_expect(TX_AUTO)
    variants = [
        ("transaction-auto-renewable-claims", auto, AUTO_FILE, ["--bundle-id", BUNDLE, "--environment", "Sandbox"],
         "transaction-auto-renewable with matching claims (--bundle-id, --environment Sandbox)."),
        ("notification-subscribed-claims", subscribed_expect(), SUBSCRIBED_FILE,
         ["--bundle-id", BUNDLE, "--app-apple-id", str(APP_APPLE_ID), "--environment", "Sandbox"],
         "notification-subscribed with matching claims (--bundle-id, --app-apple-id, --environment Sandbox)."),
        ("transaction-auto-renewable-kind", auto, AUTO_FILE, ["--kind", "transaction"],
         "transaction-auto-renewable with --kind transaction."),
        ("transaction-auto-renewable-at-signed", auto, AUTO_FILE, ["--at", "signed"],
         "transaction-auto-renewable with --at signed (the default): validated_at = signedDate."),
        ("transaction-auto-renewable-at-fixed", dict(auto, validated_at="2026-01-01T00:00:00.000Z"), AUTO_FILE,
         ["--at", "2026-01-01T00:00:00Z"],
         "transaction-auto-renewable with --at 2026-01-01T00:00:00Z (inside every certificate's validity): "
         "validated_at is the given time."),
    ]
    for name, expected, file, extra, description in variants:
        v.add(name, expected, description, file=file, args=PKI.root_args() + extra)


def build_webhook_body(v: Vectors) -> None:
    """notification-subscribed wrapped in a webhook body, as Apple posts it."""
    (JWS / "notification-webhook-body.json").write_text(webhook_body(v.tokens["notification-subscribed"]) + "\n")
    v.add("notification-webhook-body", subscribed_expect(),
          "An App Store Server Notifications V2 webhook body {\"signedPayload\": <notification-subscribed JWS>}.",
          file="jws/notification-webhook-body.json")


# --------------------------------------------------------------------------------------------------
# builders: rejections, one family per error code
# --------------------------------------------------------------------------------------------------


def build_malformed_jws_segments(v: Vectors) -> None:
    """malformed_jws: the wrong number of segments."""
    code = "malformed_jws"
    tok = make_jws(header(), TX_AUTO)
    v.rejects(code, "two-segments", "Only header.payload (no signature segment).", token=tok.rsplit(".", 1)[0])
    v.rejects(code, "four-segments", "A valid token followed by a fourth segment.",
              token=tok + "." + tok.rsplit(".", 1)[1])


def build_malformed_jws_base64(v: Vectors) -> None:
    """malformed_jws: a payload segment that is not canonical base64url, signed as sent."""
    code = "malformed_jws"
    hb = b64u(cjson(header()))
    pb_auto = b64u(cjson(TX_AUTO))
    _, pb = tune_payload(TX_AUTO, lambda b: len(b) % 4 == 2)
    v.rejects(code, "padding", "Payload segment ends in '==' base64 padding (signed as sent).",
              token=sign_segments(hb, pb + "=="))
    _, pb = tune_payload(TX_AUTO, lambda b: "-" in b, filler="~")
    v.rejects(code, "plus", "Payload segment uses '+' (standard base64) instead of '-' (signed as sent).",
              token=sign_segments(hb, pb.replace("-", "+")))
    _, pb = tune_payload(TX_AUTO, lambda b: "_" in b, filler="?")
    v.rejects(code, "slash", "Payload segment uses '/' (standard base64) instead of '_' (signed as sent).",
              token=sign_segments(hb, pb.replace("_", "/")))
    mid = len(pb_auto) // 2
    v.rejects(code, "space", "A space inside the payload segment (signed as sent).",
              token=sign_segments(hb, pb_auto[:mid] + " " + pb_auto[mid:]))
    _, pb = tune_payload(TX_AUTO, lambda b: len(b) % 4 == 2)
    last = B64URL.index(pb[-1])
    assert last & 0x0F == 0
    noncanon = pb[:-1] + B64URL[last | 0x05]
    assert b64u_decode(noncanon) == b64u_decode(pb)
    v.rejects(code, "noncanonical-bits",
              "Payload segment's last character has nonzero unused low bits: decodes to the same bytes but is not "
              "canonical base64url (RFC 4648 section 3.5). Signed as sent.", token=sign_segments(hb, noncanon))
    _, pb = tune_payload(TX_AUTO, lambda b: len(b) % 4 == 0)
    v.rejects(code, "length-mod4-1", "Payload segment length is 1 mod 4 (impossible for base64). Signed as sent.",
              token=sign_segments(hb, pb + "A"))


def token_of_length(target: int) -> str:
    """A correctly signed transaction token exactly `target` bytes long (padded with a "note")."""
    # A base64url segment can never be 1 mod 4 long, so vary a "kid" in the header to reach the exact size.
    for kid in ("", "k", "kk", "kkk"):
        hdr = header(kid=kid) if kid else header()
        room = target - (len(b64u(cjson(hdr))) + 2 + 86)  # two dots, 64-byte signature
        extra = room * 3 // 4 - len(cjson(dict(TX_AUTO, note="")))
        candidates = [e for e in range(max(0, extra - 4), extra + 5)
                      if len(b64u(cjson(dict(TX_AUTO, note="x" * e)))) == room]
        if candidates:
            tok = make_jws(hdr, dict(TX_AUTO, note="x" * candidates[0]))
            assert len(tok) == target, len(tok)
            return tok
    raise SystemExit(f"no token of {target} bytes")


def build_input_too_large(v: Vectors) -> None:
    """input_too_large: a valid token over the 64 KiB input limit."""
    v.rejects("input_too_large", "70000-bytes", "A correctly signed 70,000-byte token (payload has a long "
              "ignored member 'note'); over the 64 KiB input limit.", token=token_of_length(70000))


def build_malformed_header(v: Vectors) -> None:
    """malformed_header: header JSON that is broken, duplicated, critical or of the wrong type."""
    code = "malformed_header"
    x5c_json = json.dumps(x5c(*CHAIN), separators=(",", ":")).encode()
    v.rejects(code, "not-json", "Header segment is not JSON.",
              token=make_jws(b'{"alg":"ES256","x5c":' + x5c_json, TX_AUTO))
    v.rejects(code, "array", "Header is a JSON array, not an object.", token=make_jws([header()], TX_AUTO))
    v.rejects(code, "duplicate-alg", "Header has the member \"alg\" twice (same value).",
              token=make_jws(b'{"alg":"ES256","alg":"ES256","x5c":' + x5c_json + b"}", TX_AUTO))
    v.rejects(code, "crit", "Header has \"crit\":[\"exp\"]: an extension the verifier does not "
              "understand must make it reject (RFC 7515 section 4.1.11).",
              token=make_jws({"alg": "ES256", "crit": ["exp"], "exp": 1780315200, "x5c": x5c(*CHAIN)}, TX_AUTO))
    v.rejects(code, "invalid-utf8", "Header JSON contains invalid UTF-8 (byte 0xFF in \"kid\").",
              token=make_jws(b'{"alg":"ES256","kid":"\xff\xfe","x5c":' + x5c_json + b"}", TX_AUTO))
    v.rejects(code, "x5c-string", "x5c is a string (the leaf's base64), not an array.",
              token=make_jws({"alg": "ES256", "x5c": b64std(PKI.der["leaf"])}, TX_AUTO))


def build_unsupported_algorithm(v: Vectors) -> None:
    """unsupported_algorithm: every alg but "ES256", and none at all."""
    code = "unsupported_algorithm"
    h_none = b64u(cjson({"alg": "none", "x5c": x5c(*CHAIN)}))
    v.rejects(code, "none", "alg \"none\" with an empty signature (token ends in '.').",
              token=f"{h_none}.{b64u(cjson(TX_AUTO))}.")
    for alg, label in (("RS256", "rs256"), ("es256", "lowercase-es256"), ("HS256", "hs256")):
        v.rejects(code, label, f"alg \"{alg}\" (only \"ES256\" is accepted, case-sensitive); "
                  "signature is a valid ES256 signature by the leaf.",
                  token=make_jws({"alg": alg, "x5c": x5c(*CHAIN)}, TX_AUTO))
    v.rejects(code, "missing-alg", "Header without alg.", token=make_jws({"x5c": x5c(*CHAIN)}, TX_AUTO))


def build_missing_certificate_chain(v: Vectors) -> None:
    """missing_certificate_chain: no x5c, or an empty one."""
    code = "missing_certificate_chain"
    v.rejects(code, "no-x5c", "Header has no x5c.", token=make_jws({"alg": "ES256"}, TX_AUTO))
    v.rejects(code, "empty-x5c", "x5c is an empty array.", token=make_jws({"alg": "ES256", "x5c": []}, TX_AUTO))


def build_malformed_certificate(v: Vectors) -> None:
    """malformed_certificate: an x5c[0] that does not decode to a certificate."""
    code = "malformed_certificate"
    inter_root = x5c("intermediate", "root")
    v.rejects(code, "not-base64", "x5c[0] is \"not base64!\".",
              token=make_jws({"alg": "ES256", "x5c": ["not base64!"] + inter_root}, TX_AUTO))
    junk = hashlib.sha256(b"ReceiptKit junk certificate 1").digest() + hashlib.sha256(b"2").digest()
    junk = b"\x04" + junk[1:]
    v.rejects(code, "random-bytes", "x5c[0] is valid base64 of 64 bytes that are not a certificate.",
              token=make_jws({"alg": "ES256", "x5c": [b64std(junk)] + inter_root}, TX_AUTO))
    v.rejects(code, "number", "x5c[0] is a JSON number.",
              token=make_jws({"alg": "ES256", "x5c": [12345] + inter_root}, TX_AUTO))
    leaf_b64 = b64std(PKI.der["leaf"])
    assert leaf_b64.endswith("=")
    v.rejects(code, "missing-padding", "x5c[0] is the leaf's base64 with its '=' padding "
              "removed (x5c requires standard base64 with padding).",
              token=make_jws({"alg": "ES256", "x5c": [leaf_b64.rstrip("=")] + inter_root}, TX_AUTO))


def build_malformed_payload(v: Vectors) -> None:
    """malformed_payload: correctly signed payloads that are not a valid transaction."""
    payload_bytes = cjson(TX_AUTO)
    cases = [
        ("not-json", b'{"transactionId":"2000000951234567","bundleId":', "Payload is truncated JSON."),
        ("duplicate-transactionid", payload_bytes[:-1] + b',"transactionId":"2000000999999999"}',
         "Payload has \"transactionId\" twice with different values."),
        ("bom", b"\xef\xbb\xbf" + payload_bytes, "Payload starts with a UTF-8 byte order mark."),
        ("price-string", cjson(dict(TX_AUTO, price="9990")), "price is the string \"9990\"."),
        ("signeddate-string", cjson(dict(TX_AUTO, signedDate=str(SIGNED_MS))), "signedDate is a string."),
        ("isupgraded-string", cjson(dict(TX_AUTO, isUpgraded="false")), "isUpgraded is the string \"false\"."),
        ("quantity-fraction", cjson(dict(TX_AUTO, quantity=1.5)), "quantity is 1.5."),
        ("array", cjson([TX_AUTO]), "Payload is a JSON array."),
        ("invalid-utf8", payload_bytes.replace(b'"storefront":"USA"', b'"storefront":"US\xff"'),
         "Payload contains invalid UTF-8 (byte 0xFF in storefront)."),
    ]
    for label, pbytes, description in cases:
        v.signed(f"malformed_payload-{label}", rejected("malformed_payload"),
                 description + " Correctly signed by the leaf.", pbytes)


def build_invalid_signature(v: Vectors) -> None:
    """invalid_signature: signatures of the wrong size, out of range, by the wrong key, or over other bytes."""
    code = "invalid_signature"
    signing_input = f"{b64u(cjson(header()))}.{b64u(cjson(TX_AUTO))}"
    r, s = ecdsa_sign("leaf", signing_input.encode())
    good = raw_sig(r, s)
    tampered = cjson(dict(TX_AUTO, quantity=2))
    assert len(tampered) == len(cjson(TX_AUTO))
    hb = signing_input.split(".")[0]

    def with_sig(sig: bytes) -> str:
        return f"{signing_input}.{b64u(sig)}"
    # label, description, token, must the signature verify (None: not checked), x5c[0]
    cases = [
        ("empty", "alg ES256 with an empty signature segment.", signing_input + ".", None, None),
        ("63-bytes", "Signature is 63 bytes (last byte of a valid one dropped).", with_sig(good[:63]), None, None),
        ("65-bytes", "Signature is 65 bytes (a valid one plus a 0x00 byte).", with_sig(good + b"\x00"), None, None),
        ("r-zero", "r = 0.", with_sig(raw_sig(0, s)), False, None),
        ("s-zero", "s = 0.", with_sig(raw_sig(r, 0)), False, None),
        ("r-equals-n", "r = n (the P-256 group order).", with_sig(raw_sig(P256_N, s)), False, None),
        ("s-equals-n", "s = n (the P-256 group order).", with_sig(raw_sig(r, P256_N)), False, None),
        ("wrong-key", "x5c is the valid chain but the signature was made with other-leaf.key (a key that does "
         "not match x5c[0]).", make_jws(header(), TX_AUTO, key="other-leaf"), False, None),
        ("leaf-key-mismatch", "x5c[0] is other-leaf.der (valid chain) but the signature was made with leaf.key.",
         make_jws(header(leaf_chain("other-leaf")), TX_AUTO), False, "other-leaf"),
        ("tampered-payload", "Payload changed after signing (\"quantity\":1 -> 2, still canonical base64url and "
         "valid JSON).", f"{hb}.{b64u(tampered)}.{b64u(good)}", False, None),
        ("all-zero", "Signature is 64 zero bytes.", with_sig(bytes(64)), False, None),
    ]
    for label, description, token, sig_ok, sig_cert in cases:
        v.rejects(code, label, description, token=token, sig_ok=sig_ok, sig_cert=sig_cert)


def p384_as_es256(r384: int, s384: int) -> bytes:
    """A P-384 signature squeezed into 64 bytes: r and s reduced mod the P-256 order (meaningless)."""
    return raw_sig(r384 % P256_N, s384 % P256_N)


def build_chain_defects(v: Vectors) -> None:
    """invalid_chain_length and invalid_chain: chains of the wrong length or with a defective certificate."""
    for label, chain, description in [
        ("two", ("leaf", "intermediate"), "x5c = [leaf, intermediate]."),
        ("four", ("leaf", "intermediate", "root", "root"), "x5c = [leaf, intermediate, root, root]."),
    ]:
        v.signed(f"invalid_chain_length-{label}", rejected("invalid_chain_length"), description, TX_AUTO, chain)
    code = "invalid_chain"
    v.signed(f"{code}-leaf-ca", rejected(code), "x5c[0] is leaf-ca.der: basicConstraints CA:TRUE on the leaf.",
             TX_AUTO, leaf_chain("leaf-ca"))
    v.signed(f"{code}-leaf-keyusage-keyencipherment", rejected(code), "x5c[0] has keyUsage keyEncipherment only "
             "(no digitalSignature).", TX_AUTO, leaf_chain("leaf-keyusage-keyencipherment"))
    v.rejects(code, "leaf-p384",
              "x5c[0] is leaf-p384.der (EC P-384 key; ES256 needs P-256), header alg ES256. Signed with "
              "leaf-p384.key over SHA-256; its 48-byte r and s are reduced mod the P-256 order to fill the 64-byte "
              "ES256 signature, so the signature is meaningless: the leaf's key type must be rejected while "
              "validating the chain.",
              token=make_jws(header(leaf_chain("leaf-p384")), TX_AUTO, key="leaf-p384", transform=p384_as_es256))
    v.signed(f"{code}-intermediate-not-ca", rejected(code), "x5c[1] is intermediate-not-ca.der (CA:FALSE, but it "
             "has the intermediate marker); x5c[0] is leaf-under-intermediate-not-ca.der, signed by it.",
             TX_AUTO, leaf_chain("leaf-under-intermediate-not-ca", "intermediate-not-ca"))


def build_untrusted_root(v: Vectors) -> None:
    """untrusted_root: anchors that do not match the chain, and the built-in pin."""
    code = "untrusted_root"
    v.signed(f"{code}-lookalike-x5c-pinned", rejected(code), "x5c[2] is lookalike-root.der (same subject as the "
             "test root, different key), trusted by --pin-sha256 of the real test root.", TX_AUTO,
             ("leaf", "intermediate", "lookalike-root"), args=root_pin_args())
    v.rejects(code, "builtin-pin", "transaction-auto-renewable with no trust options: the "
              "built-in pin (Apple Root CA - G3) does not match the test root.", file=AUTO_FILE, args=[])
    v.rejects(code, "lookalike-anchor", "transaction-auto-renewable with --root "
              "lookalike-root.der: the intermediate was not issued by that key.", file=AUTO_FILE,
              args=PKI.root_args("lookalike-root"))
    v.rejects(code, "xcode-builtin", "xcode-transaction with no trust options.", file=XCODE_FILE, args=[])
    v.rejects(code, "xcode-test-root", "xcode-transaction with --root root.der.", file=XCODE_FILE, args=PKI.root_args())


def build_validity_period(v: Vectors) -> None:
    """certificate_expired and certificate_not_yet_valid: a leaf outside its validity at the validation time."""
    code = "certificate_expired"
    tx_2023 = dict(TX_AUTO, purchaseDate=ms("2023-05-20T08:15:30.000Z"),
                   originalPurchaseDate=ms("2023-03-20T08:15:30.000Z"),
                   expiresDate=ms("2023-06-20T08:15:30.000Z"), signedDate=ms("2023-06-01T12:00:00.123Z"))
    for k in ("revocationReason", "revocationDate", "revocationType", "revocationPercentage"):
        tx_2023.pop(k)
    v.signed(f"{code}-leaf-expired", rejected(code), "x5c[0] is leaf-expired.der (2022-01-01 .. 2023-01-01); "
             "signedDate 2023-06-01.", tx_2023, leaf_chain("leaf-expired"))
    v.rejects(code, "at-2030", "transaction-auto-renewable validated --at 2030-01-01T00:00:00Z "
              "(the leaf expires 2027-01-01).", file=AUTO_FILE, args=PKI.root_args() + ["--at", "2030-01-01T00:00:00Z"])
    code = "certificate_not_yet_valid"
    v.rejects(code, "at-2023", "transaction-auto-renewable validated --at 2023-06-01T00:00:00Z "
              "(the leaf starts 2024-01-01).", file=AUTO_FILE, args=PKI.root_args() + ["--at", "2023-06-01T00:00:00Z"])
    v.signed(f"{code}-leaf-not-yet-valid", rejected(code), "x5c[0] is leaf-not-yet-valid.der (2030-01-01 .. "
             "2032-01-01); signedDate 2025-06-01.", TX_AUTO, leaf_chain("leaf-not-yet-valid"))


def build_missing_apple_extension(v: Vectors) -> None:
    """missing_apple_extension: a leaf or intermediate without Apple's marker OID."""
    code = "missing_apple_extension"
    v.signed(f"{code}-leaf", rejected(code), "x5c[0] is leaf-no-marker.der (no 1.2.840.113635.100.6.11.1).",
             TX_AUTO, leaf_chain("leaf-no-marker"))
    v.signed(f"{code}-intermediate", rejected(code), "x5c[1] is intermediate-no-marker.der (no "
             "1.2.840.113635.100.6.2.1, otherwise valid and signed by the root); x5c[0] is "
             "leaf-under-intermediate-no-marker.der (has the leaf marker).", TX_AUTO,
             leaf_chain("leaf-under-intermediate-no-marker", "intermediate-no-marker"))


def build_claim_mismatches(v: Vectors) -> None:
    """bundle_id_mismatch, app_apple_id_mismatch, environment_mismatch: claims that do not match the input."""
    code = "bundle_id_mismatch"
    other = PKI.root_args() + ["--bundle-id", "com.other"]
    v.rejects(code, "transaction", "transaction-auto-renewable with --bundle-id com.other.", file=AUTO_FILE, args=other)
    v.rejects(code, "notification", "notification-subscribed with --bundle-id com.other.", file=SUBSCRIBED_FILE,
              args=other)
    v.rejects(code, "app-transaction", "app-transaction with --bundle-id com.other.", file=APP_FILE, args=other)
    tx_no_bundle = dict(TX_AUTO)
    tx_no_bundle.pop("bundleId")
    v.signed(f"{code}-missing-bundle-id", rejected(code), "A transaction without bundleId, with --bundle-id "
             "com.receiptkit.example: a claim that cannot be checked fails.", tx_no_bundle,
             args=PKI.root_args() + ["--bundle-id", BUNDLE])
    code = "app_apple_id_mismatch"
    v.rejects(code, "notification", "notification-subscribed (appAppleId 1234567890) with --app-apple-id 1.",
              file=SUBSCRIBED_FILE, args=PKI.root_args() + ["--app-apple-id", "1"])
    v.rejects(code, "missing-in-production", "notification-test (no appAppleId) with "
              "--environment Production --app-apple-id 1234567890: a missing appAppleId fails in Production, and "
              "the identity check comes before the environment check.", file=TEST_FILE,
              args=PKI.root_args() + ["--environment", "Production", "--app-apple-id", str(APP_APPLE_ID)])
    code = "environment_mismatch"
    production = PKI.root_args() + ["--environment", "Production"]
    v.rejects(code, "transaction", "transaction-auto-renewable (Sandbox) with --environment Production.",
              file=AUTO_FILE, args=production)
    v.rejects(code, "external-purchase-token-sandbox", "notification-external-purchase-token-sandbox "
              "(SANDBOX_ prefix -> Sandbox) with --environment Production.", file=EXT_SANDBOX_FILE, args=production)


def build_nested_failures(v: Vectors) -> None:
    """A correctly signed notification whose nested JWS fails: the nested failure is the result."""
    subscribed = json.loads(b64u_decode(v.tokens["notification-subscribed"].split(".")[1]))
    hb_n, _, sig_n = subscribed["data"]["signedTransactionInfo"].split(".")
    tampered_tx = cjson(dict(TX_INITIAL_BUY, quantity=2))
    assert len(tampered_tx) == len(cjson(TX_INITIAL_BUY))
    notif = copy.deepcopy(subscribed)
    notif["notificationUUID"] = "002e14d5-51f5-4503-b5a8-c3a1af68eb21"
    notif["data"]["signedTransactionInfo"] = f"{hb_n}.{b64u(tampered_tx)}.{sig_n}"
    v.signed("invalid_signature-nested-transaction", rejected("invalid_signature"), "A correctly signed "
             "SUBSCRIBED notification whose data.signedTransactionInfo payload was changed after signing "
             "(quantity 1 -> 2).", notif)
    notif = copy.deepcopy(subscribed)
    notif["notificationUUID"] = "002e14d5-51f5-4503-b5a8-c3a1af68eb22"
    notif["data"]["signedRenewalInfo"] = make_jws(header(leaf_chain("leaf-expired")), RENEWAL_FOR_NOTIFICATION)
    v.signed("certificate_expired-nested-renewal-info", rejected("certificate_expired"), "A correctly signed "
             "SUBSCRIBED notification whose data.signedRenewalInfo is signed by the leaf-expired.der chain "
             "(expired 2023-01-01; notification and renewal signedDate 2025-06-01).", notif)


# (vector name, or "" for a blank line, "webhook" for the webhook body; expected subset)
BATCH = [
    ("transaction-auto-renewable", {"status": "verified", "kind": "transaction"}),
    ("renewal-info", {"status": "verified", "kind": "renewal_info"}),
    ("webhook", {"status": "verified", "kind": "notification"}),
    ("", None),
    ("malformed_jws-two-segments", rejected("malformed_jws")),
    ("invalid_signature-tampered-payload", rejected("invalid_signature")),
    ("xcode-transaction", rejected("untrusted_root")),
    ("certificate_expired-leaf-expired", rejected("certificate_expired")),
    ("missing_apple_extension-leaf", rejected("missing_apple_extension")),
    ("malformed_payload-price-string", rejected("malformed_payload")),
    ("unsupported_algorithm-none", rejected("unsupported_algorithm")),
    ("app-transaction", {"status": "verified", "kind": "app_transaction"}),
    ("notification-test", {"status": "verified", "kind": "notification"}),
]


def build_batch(v: Vectors) -> None:
    """batch.txt (earlier vectors, one a line, one blank line) and batch.expected.json."""
    lines = {"": "", "webhook": webhook_body(v.tokens["notification-subscribed"])}
    (JWS / "batch.txt").write_text("".join(lines.get(name, v.tokens.get(name)) + "\n" for name, _ in BATCH))
    results = []
    for line_no, (_, expect) in enumerate(BATCH, start=1):
        if expect is not None:
            results.append({"input": len(results) + 1, "line": line_no, "expected": expect})
    (JWS / "batch.expected.json").write_text(json.dumps({
        "file": "jws/batch.txt",
        "args": PKI.root_args(),
        "description": "One input per line; blank lines are skipped. 'input' counts non-empty lines, 'line' is "
                       "the 1-based line number in the file; 'expected' is a subset of that input's record.",
        "results": results,
    }, indent=2) + "\n")


# Every builder, in manifest order; later builders read tokens and files of earlier ones.
BUILDERS: list[Callable[[Vectors], None]] = [
    build_transactions,
    build_transaction_trust_variants,
    build_renewal_info,
    build_notification_subscribed,
    build_notification_summary,
    build_notification_external_purchase_tokens,
    build_notification_rescind_consent,
    build_notification_consumption_request,
    build_notification_test,
    build_notification_no_signed_date,
    build_app_and_realtime,
    build_xcode_transaction,
    build_option_variants,
    build_webhook_body,
    build_malformed_jws_segments,
    build_malformed_jws_base64,
    build_input_too_large,
    build_malformed_header,
    build_unsupported_algorithm,
    build_missing_certificate_chain,
    build_malformed_certificate,
    build_malformed_payload,
    build_invalid_signature,
    build_chain_defects,
    build_untrusted_root,
    build_validity_period,
    build_missing_apple_extension,
    build_claim_mismatches,
    build_nested_failures,
    build_batch,
]


def build_vectors() -> Vectors:
    """Run every builder; the caller writes the manifest."""
    v = Vectors()
    for build in BUILDERS:
        build(v)
    return v


# --------------------------------------------------------------------------------------------------
# self-checks (python + openssl only; independent of the Swift code)
# --------------------------------------------------------------------------------------------------


def openssl_es256_verify(tmp: Path, token: str, cert: str) -> bool:
    """Does `openssl dgst -verify` accept the token's signature under certificate `cert`'s key?"""
    h, p, sig_b64 = token.split(".")
    sig = b64u_decode(sig_b64)
    if len(sig) != 64:
        return False
    r, s = int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big")
    pub = tmp / f"{cert}.pub.pem"
    if not pub.exists():
        pem = run([OPENSSL, "x509", "-inform", "DER", "-in", str(PKI.directory / f"{cert}.der"), "-pubkey",
                   "-noout"]).stdout
        pub.write_bytes(pem)
    sig_file = tmp / "sig.der"
    sig_file.write_bytes(encode_ecdsa_sig(r, s))
    proc = run([OPENSSL, "dgst", "-sha256", "-verify", str(pub), "-signature", str(sig_file)],
               data=f"{h}.{p}".encode("ascii"), check=False)
    return proc.returncode == 0


def epoch(day: str) -> str:
    """'YYYY-MM-DD' -> seconds since the epoch (openssl -attime)."""
    return str(ms(iso_day(day)) // 1000)


def openssl_verify(tmp: Path, leaf: str, inter: str | None, root: str, day: str, strict: bool = False) -> str:
    """"OK", or openssl verify's errors for leaf <- inter <- root at `day`."""
    args = [OPENSSL, "verify", "-attime", epoch(day), "-partial_chain", "-CAfile", str(tmp / f"{root}.pem")]
    if strict:
        args.append("-x509_strict")
    if inter:
        args += ["-untrusted", str(tmp / f"{inter}.pem")]
    args.append(str(tmp / f"{leaf}.pem"))
    proc = run(args, check=False)
    if proc.returncode == 0:
        return "OK"
    lines = (proc.stdout + proc.stderr).decode(errors="replace").splitlines()
    return "; ".join(line.split(": ", 1)[-1] for line in lines if line.startswith("error ")) or lines[-1]


# leaf, intermediate, root, day, must openssl verify accept the chain
CHAIN_CASES = [
    ("leaf", "intermediate", "root", "2025-06-01", True),
    ("leaf-no-keyusage", "intermediate", "root", "2025-06-01", True),
    ("other-leaf", "intermediate", "root", "2025-06-01", True),
    ("leaf-no-marker", "intermediate", "root", "2025-06-01", True),  # marker is Apple policy, not X.509
    ("leaf-under-intermediate-no-marker", "intermediate-no-marker", "root", "2025-06-01", True),
    ("leaf", "intermediate", "root-sibling", "2025-06-01", True),
    ("xcode", None, "xcode", "2025-06-01", True),
    ("leaf-expired", "intermediate", "root", "2023-06-01", False),
    ("leaf", "intermediate", "root", "2030-01-01", False),
    ("leaf", "intermediate", "root", "2023-06-01", False),
    ("leaf-not-yet-valid", "intermediate", "root", "2025-06-01", False),
    ("leaf-under-intermediate-not-ca", "intermediate-not-ca", "root", "2025-06-01", False),
    ("leaf", "intermediate", "lookalike-root", "2025-06-01", False),
    ("xcode", None, "root", "2025-06-01", False),
]


def chain_problems(tmp: Path) -> list[str]:
    """Certificate chains openssl verify judges otherwise than the vectors assume."""
    problems = []
    for leaf, inter, root, day, ok in CHAIN_CASES:
        result = openssl_verify(tmp, leaf, inter, root, day)
        print(f"  openssl verify {leaf} <- {inter or '-'} <- {root} at {day}: {result}")
        if (result == "OK") != ok:
            problems.append(f"chain {leaf}/{inter}/{root} at {day}: {result}")
    strict = openssl_verify(tmp, "leaf", "intermediate", "root", "2025-06-01", strict=True)
    print(f"  openssl verify -x509_strict leaf <- intermediate <- root: {strict}")
    if strict != "OK":
        problems.append(f"valid chain fails -x509_strict: {strict}")
    return problems


def file_problems() -> list[str]:
    """JWS files that are not exactly one line, or too large without meaning to be."""
    problems = []
    for f in sorted(JWS.iterdir()):
        if f.suffix != ".jws":
            continue
        text = f.read_text()
        if not text.endswith("\n") or "\n" in text[:-1]:
            problems.append(f"{f.name}: not exactly one line")
        if f.stat().st_size > 65536 and not f.name.startswith("input_too_large"):
            problems.append(f"{f.name}: over 64 KiB")
    return problems


def signature_problems(tmp: Path, v: Vectors) -> list[str]:
    """Signatures (top-level and nested in notifications) that verify when they must not, or the reverse."""
    problems = []
    for name, token, cert, must in v.checks:
        ok = openssl_es256_verify(tmp, token, cert or token_leaf(token))
        if ok != must:
            problems.append(f"{name}: signature verifies={ok}, wanted {must}")
    for name, token in v.tokens.items():
        if not name.startswith("notification-"):
            continue
        payload = json.loads(b64u_decode(token.split(".")[1]))
        holder = payload.get("data") or payload.get("appData") or {}
        for member in ("signedTransactionInfo", "signedRenewalInfo", "signedAppTransactionInfo"):
            if member in holder and not openssl_es256_verify(tmp, holder[member], "leaf"):
                problems.append(f"{name}: nested {member} does not verify")
    return problems


def verified_token_problems(v: Vectors) -> list[str]:
    """Vectors that must verify but are not ES256 with a 64-byte signature, or whose expectation is off."""
    problems = []
    for e in v.entries:
        name = e["name"]
        if e["expected"]["status"] != "verified" or name not in v.tokens:
            continue
        h, p, sig = (b64u_decode(part) for part in v.tokens[name].split("."))
        if len(sig) != 64:
            problems.append(f"{name}: signature length {len(sig)}")
        if json.loads(h).get("alg") != "ES256":
            problems.append(f"{name}: alg")
        if len(v.tokens[name]) > 65536:
            problems.append(f"{name}: too large")
        want = [normalize_transaction(json.loads(p))]
        if e["expected"]["kind"] == "transaction" and e["expected"]["transactions"] != want:
            problems.append(f"{name}: expectation does not match payload")
    return problems


def self_check(tmp: Path, v: Vectors) -> None:
    """Check chains, files, signatures, verified tokens and manifest references; exit non-zero on a problem."""
    problems = chain_problems(tmp) + file_problems() + signature_problems(tmp, v)
    problems += verified_token_problems(v) + v.missing_files()
    finish_self_check(problems, f"{len(v.checks)} signatures checked with openssl")


def token_leaf(token: str) -> str:
    """The name of the certificate in the token's x5c[0]."""
    by_b64 = {b64std(der): name for name, der in PKI.der.items()}
    return by_b64[json.loads(b64u_decode(token.split(".")[0]))["x5c"][0]]


# --------------------------------------------------------------------------------------------------


def main() -> None:
    # The "x5c entry without base64 padding" vector needs a leaf whose DER length is not a multiple of 3.
    generate(__doc__, PKI, JWS, stale=lambda f: True, build=lambda tmp: build_vectors(), self_check=self_check,
             retry={"leaf": lambda der: len(der) % 3 != 0})


if __name__ == "__main__":
    main()
