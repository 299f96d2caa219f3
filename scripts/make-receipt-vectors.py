#!/usr/bin/env python3
"""Regenerate ReceiptKit's TestVectors/receipts/: legacy App Store receipts signed by the project's
own RSA test PKI.

Run from the repository root:

    python3 scripts/make-receipt-vectors.py            # reuse TestVectors/receipts/pki/*.key if present
    python3 scripts/make-receipt-vectors.py --new-pki  # throw the keys away and make new ones

Needs only python3 (standard library) and the `openssl` command-line tool (OpenSSL 3.0 or later).
The test PKI, DER helpers and manifest schema live in scripts/testpki.py, shared with
scripts/make-test-vectors.py.

How a receipt is made, as Apple makes one:
  1. `openssl asn1parse -genconf` builds the payload (a SET OF ReceiptAttribute) from a generated
     configuration; the script checks it against its own DER encoder.
  2. `openssl cms -sign -binary -nodetach -noattr` signs it (RSA PKCS #1 v1.5, SHA-1 or SHA-256).
  3. The script takes OpenSSL's signature and writes the envelope exactly as Apple does — DER, or
     Xcode's BER with indefinite lengths and a segmented payload — because OpenSSL's own layout
     differs from Apple's (it omits the digest algorithms' NULL parameters). Failure vectors change
     one thing of that envelope, payload or chain.

What it writes (see TestVectors/README.md, section receipts/):
  TestVectors/receipts/pki/   RSA test PKI built like Apple's receipt PKI, defective certificates,
                              a self-signed StoreKit-like certificate, test-only private keys
  TestVectors/receipts/       one receipt per file (.der binary, .b64 base64, .json request body)
                              and manifest.json with the verifier output expected for each

Each family of vectors has its own builder function (`BUILDERS` lists them in manifest order).
RSA PKCS #1 v1.5 signatures are deterministic, so with the same keys every run writes the same
bytes.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from testpki import (
    EPOCH, EXT_INTER, EXT_INTER_NOT_CA, EXT_INTER_NO_MARKER, EXT_LEAF, EXT_LEAF_CA, EXT_LEAF_KEYENC,
    EXT_LEAF_NO_MARKER, EXT_ROOT, INTER_DATES, LEAF_DATES, NULL, OPENSSL, ORG, ROOT_DATES, TV, CertSpec,
    Manifest, TestPKI, b64std, chain_record, children, der_int, der_set_of, finish_self_check, generate,
    indefinite, iso_ms, offer_record, oid, parse_tlv, rejected, rfc3339_ms, run, sha256_hex, tlv,
    transaction_record, verified_record,
)

OUT = TV / "receipts"

OID_SIGNED_DATA = oid("1.2.840.113549.1.7.2")
OID_DATA = oid("1.2.840.113549.1.7.1")
OID_ENVELOPED_DATA = oid("1.2.840.113549.1.7.3")
OID_SHA1 = oid("1.3.14.3.2.26")
OID_SHA256 = oid("2.16.840.1.101.3.4.2.1")
OID_MD5 = oid("1.2.840.113549.2.5")
OID_RSA = oid("1.2.840.113549.1.1.1")
OID_SHA1_RSA = oid("1.2.840.113549.1.1.5")
OID_SHA256_RSA = oid("1.2.840.113549.1.1.11")
OID_ECDSA_SHA256 = oid("1.2.840.10045.4.3.2")
OID_CONTENT_TYPE_ATTR = oid("1.2.840.113549.1.9.3")
DIGESTS = {"sha1": OID_SHA1, "sha256": OID_SHA256}
SIG_ALGS = {"rsa": OID_RSA, "sha1rsa": OID_SHA1_RSA, "sha256rsa": OID_SHA256_RSA}

# --------------------------------------------------------------------------------------------------
# test PKI (RSA, like Apple's receipt PKI)
# --------------------------------------------------------------------------------------------------

SUBJ_ROOT = f"/CN=ReceiptKit Test Apple Root CA/OU=ReceiptKit Test Certification Authority/{ORG}"
SUBJ_INTER = f"/CN=ReceiptKit Test Worldwide Developer Relations CA/OU=G5/{ORG}"
SUBJ_INTER_NO_MARKER = f"/CN=ReceiptKit Test Worldwide Developer Relations CA (no marker)/OU=G5/{ORG}"
SUBJ_INTER_NOT_CA = f"/CN=ReceiptKit Test Worldwide Developer Relations CA (not a CA)/OU=G5/{ORG}"
SUBJ_LEAF = f"/CN=ReceiptKit Test Mac App Store and iTunes Store Receipt Signing/OU=ReceiptKit Test Developer Relations/{ORG}"
SUBJ_STOREKIT = "/CN=ReceiptKit Test StoreKit/O=ReceiptKit Test StoreKit/OU=ReceiptKit Test StoreKit/C=US"

# Like Apple's "StoreKit" certificate that signs Xcode receipts: self-signed, a CA, a critical
# code-signing extended key usage, no key identifiers.
EXT_STOREKIT = """basicConstraints = critical, CA:TRUE
keyUsage = critical, digitalSignature, keyCertSign
extendedKeyUsage = critical, codeSigning
subjectKeyIdentifier = none
authorityKeyIdentifier = none
"""


def cert(name: str, key: str, subject: str, issuer: str | None, ext: str, dates: tuple[str, str],
         digest: str = "sha256") -> CertSpec:
    """A certificate of the receipt PKI (sha256WithRSAEncryption unless `digest` says otherwise)."""
    return CertSpec(name, key, subject, issuer, ext, dates, digest)


def leaf(name: str, key: str = "leaf", issuer: str = "intermediate", ext: str = EXT_LEAF,
         dates: tuple[str, str] = LEAF_DATES, digest: str = "sha256") -> CertSpec:
    """A receipt-signing leaf."""
    return CertSpec(name, key, SUBJ_LEAF, issuer, ext, dates, digest)


PKI = TestPKI(
    directory=OUT / "pki",
    keys={"root": "RSA:2048", "intermediate": "RSA:2048", "leaf": "RSA:2048", "other": "RSA:2048",
          "lookalike-root": "RSA:2048", "intermediate-no-marker": "RSA:2048", "intermediate-not-ca": "RSA:2048",
          "storekit": "RSA:2048", "leaf-rsa1024": "RSA:1024", "leaf-ec": "EC:P-256"},
    certs=[
        cert("root", "root", SUBJ_ROOT, None, EXT_ROOT, ROOT_DATES),
        cert("intermediate", "intermediate", SUBJ_INTER, "root", EXT_INTER, INTER_DATES),
        leaf("leaf"),
        # The same intermediate and leaf keys, certified with SHA-1 signatures as Apple did before 2016.
        cert("intermediate-sha1", "intermediate", SUBJ_INTER, "root", EXT_INTER, INTER_DATES, "sha1"),
        leaf("leaf-sha1", issuer="intermediate-sha1", digest="sha1"),
        leaf("leaf-no-marker", ext=EXT_LEAF_NO_MARKER),
        cert("intermediate-no-marker", "intermediate-no-marker", SUBJ_INTER_NO_MARKER, "root", EXT_INTER_NO_MARKER,
             INTER_DATES),
        leaf("leaf-under-intermediate-no-marker", issuer="intermediate-no-marker"),
        cert("intermediate-not-ca", "intermediate-not-ca", SUBJ_INTER_NOT_CA, "root", EXT_INTER_NOT_CA, INTER_DATES),
        leaf("leaf-under-intermediate-not-ca", issuer="intermediate-not-ca"),
        leaf("leaf-ca", ext=EXT_LEAF_CA),
        leaf("leaf-keyusage-keyencipherment", ext=EXT_LEAF_KEYENC),
        leaf("leaf-expired", dates=("2022-01-01", "2023-01-01")),
        leaf("leaf-not-yet-valid", dates=("2030-01-01", "2032-01-01")),
        leaf("leaf-rsa1024", key="leaf-rsa1024"),
        leaf("leaf-ec", key="leaf-ec"),
        cert("lookalike-root", "lookalike-root", SUBJ_ROOT, None, EXT_ROOT, ROOT_DATES),
        cert("root-sibling", "root", SUBJ_ROOT, None, EXT_ROOT, ("2019-06-01", "2044-06-01")),
        cert("storekit", "storekit", SUBJ_STOREKIT, None, EXT_STOREKIT, ("2020-01-01", "2040-01-01")),
    ],
    title="receipt test PKI",
    generator="make-receipt-vectors.py",
    serial_bytes=8,
    default_md="sha256",
    fingerprinted=("root", "lookalike-root", "root-sibling", "storekit"),
)


def issuer_and_serial(cert: bytes) -> tuple[bytes, bytes]:
    """The issuer Name encoding and the serialNumber INTEGER contents of a certificate."""
    _, cs, ce = parse_tlv(cert, 0)
    _, tbs_start, tbs_end = parse_tlv(cert, cs)
    parts = children(cert, tbs_start, tbs_end)
    if parts[0][0] == 0xA0:
        parts = parts[1:]
    serial = cert[parts[0][2]:parts[0][3]]
    issuer = cert[parts[2][1]:parts[2][3]]
    return issuer, serial


# --------------------------------------------------------------------------------------------------
# payloads: openssl asn1parse -genconf, checked against the script's own encoder
# --------------------------------------------------------------------------------------------------

# An attribute is (type, version, value); a value is ("utf8", str), ("ia5", str), ("int", n),
# ("raw", bytes) for the OCTET STRING's contents as given, or ("set", [attributes]) for an in-app
# purchase.


def value_bytes(value) -> bytes:
    kind, data = value
    if kind == "utf8":
        return tlv(0x0C, data.encode("utf-8"))
    if kind == "ia5":
        return tlv(0x16, data.encode("ascii"))
    if kind == "int":
        return der_int(data)
    if kind == "raw":
        return data
    if kind == "set":
        return encode_payload(data)
    raise ValueError(kind)


def encode_attribute(attribute) -> bytes:
    type_, version, value = attribute
    return tlv(0x30, der_int(type_) + der_int(version) + tlv(0x04, value_bytes(value)))


def encode_payload(attributes) -> bytes:
    return der_set_of([encode_attribute(a) for a in attributes])


def genconf(attributes) -> str:
    """An `openssl asn1parse -genconf` configuration for the payload."""
    sections: list[str] = []
    counter = [0]

    def set_section(attrs) -> str:
        name = f"set{counter[0]}"
        counter[0] += 1
        lines = [f"[{name}]"]
        bodies: list[str] = []
        for index, (type_, version, value) in enumerate(attrs):
            attr_name = f"{name}_a{index}"
            lines.append(f"a{index} = SEQUENCE:{attr_name}")
            kind, data = value
            if kind == "set":
                rendered = f"OCTWRAP,SET:{set_section(data)}"
            else:
                contents = value_bytes(value)
                rendered = f"FORMAT:HEX,OCTETSTRING:{contents.hex()}" if contents else "OCTETSTRING:"
            bodies.append(f"[{attr_name}]\ntype = INTEGER:{type_}\nversion = INTEGER:{version}\nvalue = {rendered}\n")
        sections.append("\n".join(lines) + "\n" + "".join(bodies))
        return name

    top = set_section(attributes)
    return f"asn1 = SET:{top}\n\n" + "\n".join(sections)


def make_payload(tmp: Path, name: str, attributes) -> bytes:
    conf = tmp / f"{name}.genconf"
    conf.write_text(genconf(attributes))
    out = tmp / f"{name}.payload.der"
    run([OPENSSL, "asn1parse", "-genconf", str(conf), "-out", str(out), "-noout"])
    payload = out.read_bytes()
    mine = encode_payload(attributes)
    if payload != mine:
        raise SystemExit(f"{name}: openssl asn1parse -genconf and the script's encoder disagree")
    return payload


BUNDLE = "com.receiptkit.example"
CREATED = "2025-06-01T12:00:00Z"
OPAQUE = bytes.fromhex("5f2c1e7a9b3d48c6a1e0f4d27b96c385")
DEVICE_UUID = "3C5B1D7E-2A4F-4E8B-9C61-0D2E7F4A8B90"
OTHER_UUID = "00000000-0000-0000-0000-000000000000"
DEVICE_MAC = "0A1B2C3D4E5F"
OTHER_MAC = "0A1B2C3D4E60"


def device_bytes(text: str) -> bytes:
    return bytes.fromhex(text.replace("-", "").replace(":", ""))


def device_hash(device: str, bundle: str = BUNDLE, opaque: bytes = OPAQUE) -> bytes:
    return hashlib.sha1(device_bytes(device) + opaque + tlv(0x0C, bundle.encode())).digest()


def purchase(product: str, tx: str, purchased: str, *, quantity=1, original_tx=None, original_date=None,
             product_type=None, expires="", web_order=0, cancelled="", trial=0, intro=None, promo=None,
             undocumented=True, extra=()) -> list:
    attrs = [
        (1701, 1, ("int", quantity)),
        (1702, 1, ("utf8", product)),
        (1703, 1, ("utf8", tx)),
        (1704, 1, ("ia5", purchased)),
        (1705, 1, ("utf8", original_tx or tx)),
        (1706, 1, ("ia5", original_date or purchased)),
        (1708, 1, ("ia5", expires)),
        (1711, 1, ("int", web_order)),
        (1712, 1, ("ia5", cancelled)),
        (1713, 1, ("int", trial)),
    ]
    if product_type is not None:
        attrs.append((1707, 1, ("int", product_type)))
    if intro is not None:
        attrs.append((1719, 1, ("int", intro)))
    if promo is not None:
        attrs.append((1721, 1, ("utf8", promo)))
    if undocumented:
        # Apple writes these undocumented attributes too (empty strings and zeros).
        attrs += [(1709, 1, ("utf8", "")), (1710, 1, ("int", 0)), (1714, 1, ("utf8", "")), (1722, 1, ("int", 0))]
    attrs += list(extra)
    return attrs


PURCHASES = [
    purchase("com.receiptkit.example.premium.monthly", "2000000951234567", "2025-05-20T08:15:30Z",
             original_tx="2000000901234567", original_date="2025-03-20T08:15:30Z", product_type=3,
             expires="2025-06-20T08:15:30Z", web_order=2000000098765432, intro=1),
    purchase("com.receiptkit.example.coins.100", "2000000951230001", "2025-05-02T09:00:00Z", quantity=3,
             product_type=1, cancelled="2025-05-03T10:30:00Z"),
    purchase("com.receiptkit.example.premium.yearly", "2000000951230002", "2025-02-01T10:00:00.250Z",
             original_date="2025-02-01T11:00:00.250+0100", product_type=3, expires="2025-02-08T10:00:00.250Z",
             web_order=2000000098760001, trial=1, intro=0),
    purchase("com.receiptkit.example.premium.monthly", "2000000951230003", "2025-04-20T08:15:30-0700",
             original_tx="2000000901234567", original_date="2025-03-20T08:15:30Z", product_type=3,
             expires="2025-05-20T15:15:30Z", web_order=2000000098760002, intro=0,
             promo="com.receiptkit.example.promo.spring"),
    purchase("com.receiptkit.example.lifetime", "2000000951230004", "2024-12-24T18:00:00Z", product_type=0),
    purchase("com.receiptkit.example.season.pass", "2000000951230005", "2025-01-15T12:00:00Z", product_type=2,
             expires="2025-04-15T12:00:00Z"),
]


def app_attributes(*, receipt_type="ProductionSandbox", bundle=BUNDLE, device=DEVICE_UUID, purchases=PURCHASES,
                   app_item_id=0, created=CREATED, drop=(), replace=None, extra=()) -> list:
    attrs = [
        (0, 1, ("utf8", receipt_type)),
        (1, 1, ("int", app_item_id)),
        (2, 1, ("utf8", bundle)),
        (3, 1, ("utf8", "42")),
        (4, 2, ("raw", OPAQUE)),
        (5, 1, ("raw", device_hash(device, bundle))),
        (12, 1, ("ia5", created)),
        (15, 1, ("int", 7777 if receipt_type.startswith("Production") and app_item_id else 0)),
        (16, 1, ("int", 812345678 if app_item_id else 0)),
        (18, 1, ("ia5", "2013-08-01T07:00:00Z")),
        (19, 1, ("utf8", "1.0")),
        # undocumented attributes Apple writes
        (8, 1, ("ia5", "")),
        (10, 1, ("utf8", "4+")),
        (13, 1, ("int", 180602)),
        (14, 1, ("int", 229)),
        (25, 1, ("int", 3)),
        (6, 1, ("raw", bytes.fromhex("462c4c9e915240df35dc4c6914f9a062"))),
    ]
    attrs = [a for a in attrs if a[0] not in drop]
    if replace:
        attrs = [(t, v, replace[t]) if t in replace else (t, v, val) for t, v, val in attrs]
    attrs += list(extra)
    attrs += [(17, 1, ("set", p)) for p in purchases]
    return attrs


def xcode_attributes(purchases=None) -> list:
    """Like Xcode's StoreKit Testing receipts: few attributes, no original transaction ids, +0000 dates."""
    if purchases is None:
        purchases = [[
            (1701, 1, ("int", 1)),
            (1702, 1, ("utf8", "com.receiptkit.example.premium.monthly")),
            (1703, 1, ("utf8", "0")),
            (1704, 1, ("ia5", "2025-06-01T11:59:58+0000")),
            (1708, 1, ("ia5", "2025-07-01T11:59:58+0000")),
            (1719, 1, ("int", 1)),
        ]]
    return [
        (0, 1, ("utf8", "Xcode")),
        (1, 1, ("int", 0)),
        (2, 1, ("utf8", BUNDLE)),
        (3, 1, ("utf8", "1")),
        (4, 1, ("raw", bytes.fromhex("f2bff5fb0f000000"))),
        (5, 1, ("raw", hashlib.sha1(b"xcode").digest())),
        (8, 1, ("ia5", "")),
        (12, 1, ("ia5", "2025-06-01T12:00:00+0000")),
        (21, 1, ("ia5", "4001-01-01T00:00:00+0000")),
    ] + [(17, 1, ("set", p)) for p in purchases]


# --------------------------------------------------------------------------------------------------
# signing and the envelope
# --------------------------------------------------------------------------------------------------


def cms_signature(tmp: Path, payload: bytes, signer_cert: str, key: str, md: str) -> bytes:
    """The signature `openssl cms -sign -binary -nodetach -noattr` makes over `payload`."""
    data = tmp / "to-sign.der"
    data.write_bytes(payload)
    out = tmp / "signed.der"
    run([OPENSSL, "cms", "-sign", "-binary", "-nodetach", "-noattr", "-in", str(data), "-signer",
         str(tmp / f"{signer_cert}.pem"), "-inkey", str(PKI.key_path(key)), "-md", md, "-outform", "DER",
         "-out", str(out)])
    cms = out.read_bytes()
    # ContentInfo -> [0] -> SignedData -> last element (signerInfos SET) -> SignerInfo -> signature
    _, cs, ce = parse_tlv(cms, 0)
    explicit = children(cms, cs, ce)[1]
    _, sd_start, sd_end = parse_tlv(cms, explicit[2])
    signer_infos = children(cms, sd_start, sd_end)[-1]
    signer_info = children(cms, signer_infos[2], signer_infos[3])[0]
    parts = children(cms, signer_info[2], signer_info[3])
    sid = parts[1]
    issuer, serial = issuer_and_serial(PKI.der[signer_cert])
    sid_parts = children(cms, sid[2], sid[3])
    if cms[sid_parts[0][1]:sid_parts[0][3]] != issuer or cms[sid_parts[1][2]:sid_parts[1][3]] != serial:
        raise SystemExit(f"openssl cms named another signer than {signer_cert}")
    signature = [p for p in parts if p[0] == 0x04][-1]
    return cms[signature[2]:signature[3]]


def openssl_cms_raw(tmp: Path, payload: bytes) -> bytes:
    """OpenSSL's own CMS layout for a receipt (certificates included), for the vector that shows it
    is not Apple's."""
    data = tmp / "to-sign.der"
    data.write_bytes(payload)
    chain = tmp / "chain.pem"
    chain.write_text((tmp / "intermediate.pem").read_text() + (tmp / "root.pem").read_text())
    out = tmp / "signed-raw.der"
    run([OPENSSL, "cms", "-sign", "-binary", "-nodetach", "-noattr", "-in", str(data), "-signer",
         str(tmp / "leaf.pem"), "-inkey", str(PKI.key_path("leaf")), "-certfile", str(chain), "-md", "sha256",
         "-outform", "DER", "-out", str(out)])
    return out.read_bytes()


def algorithm(oid_bytes: bytes, parameters: bytes | None = NULL) -> bytes:
    return tlv(0x30, tlv(0x06, oid_bytes) + (parameters or b""))


def envelope(payload: bytes, certs: list[str], signature: bytes, *, signer: str | None = None, digest="sha256",
             sig_alg="rsa", layout="der", segments=1, **m) -> bytes:
    """A receipt envelope exactly as Apple writes it, except for the mutations named in `m`."""
    ber = layout == "ber"
    wrap = indefinite if ber else tlv
    signer = signer or certs[0]
    issuer, serial = issuer_and_serial(PKI.der[signer])
    issuer = m.get("sid_issuer", issuer)
    serial = m.get("sid_serial", serial)

    version = m.get("sd_version_bytes", der_int(m.get("sd_version", 1)))
    digest_algorithms = tlv(0x31, b"".join(m.get("digest_algorithms", [algorithm(DIGESTS[digest])])))
    econtent_type = tlv(0x06, m.get("econtent_type", OID_DATA))
    if ber:
        size = -(-len(payload) // segments)
        pieces = [payload[i:i + size] for i in range(0, len(payload), size)]
        body = b"".join(tlv(0x04, p) for p in pieces) + (tlv(0x04, b"") if m.get("empty_segment") else b"")
        econtent = indefinite(0xA0, indefinite(0x24, body))
        encap = indefinite(0x30, econtent_type + econtent)
    else:
        encap = tlv(0x30, econtent_type + tlv(0xA0, tlv(0x04, payload)))
    certificates = b"" if m.get("no_certificates") else tlv(0xA0, b"".join(PKI.der[c] for c in certs))
    crls = tlv(0xA1, m["crls"]) if "crls" in m else b""

    signer_info = der_int(m.get("si_version", 1))
    signer_info += tlv(0x30, issuer + tlv(0x02, serial))
    signer_info += m.get("si_digest", algorithm(DIGESTS[digest]))
    if "signed_attributes" in m:
        signer_info += tlv(0xA0, m["signed_attributes"])
    signer_info += m.get("si_signature_algorithm", algorithm(SIG_ALGS[sig_alg]))
    signer_info += tlv(0x04, signature)
    if "unsigned_attributes" in m:
        signer_info += tlv(0xA1, m["unsigned_attributes"])
    signer_info = tlv(0x30, signer_info)
    signer_infos_body = signer_info * (2 if m.get("two_signers") else 1)
    signer_infos = indefinite(0x31, signer_infos_body) if m.get("signer_infos_indefinite") else tlv(0x31, signer_infos_body)

    signed_data_body = version + digest_algorithms + encap + certificates + crls + signer_infos
    signed_data = tlv(0x30, signed_data_body) if m.get("definite_signed_data") else wrap(0x30, signed_data_body)
    content_info = wrap(0x30, tlv(0x06, m.get("content_type", OID_SIGNED_DATA)) + wrap(0xA0, signed_data))
    return content_info + m.get("trailing", b"")


# --------------------------------------------------------------------------------------------------
# expected output, computed from the payload with the script's own mapping
# --------------------------------------------------------------------------------------------------

PRODUCT_TYPES = {0: "non_consumable", 1: "consumable", 2: "non_renewing_subscription", 3: "auto_renewable_subscription"}
ENVIRONMENTS = {"Production": "Production", "ProductionSandbox": "Sandbox", "ProductionVPP": "Production",
                "ProductionVPPSandbox": "Sandbox", "Xcode": "Xcode"}


def purchases_in_order(receipt: list) -> list:
    """The in-app purchases in the order the payload holds them: a DER SET OF is sorted by encoding,
    as Apple's payloads are."""
    return [v[1] for a in sorted((a for a in receipt if a[0] == 17), key=encode_attribute) for v in [a[2]]]


def attr_map(attributes) -> dict:
    return {t: v for t, _, v in attributes if t != 17}


def date_of(value) -> int | None:
    if value is None or value[1] == "":
        return None
    return rfc3339_ms(value[1])


def receipt_offer(a: dict) -> dict | None:
    """The offer of an in-app purchase: promotional (1721), else introductory (1713 trial or 1719)."""
    trial = a.get(1713, (None, 0))[1] == 1
    intro = a.get(1719, (None, 0))[1] == 1
    promo = a.get(1721, (None, ""))[1] or None
    discount = "free_trial" if trial else None
    if promo:
        return offer_record("promotional", promo, discount, None)
    if trial or intro:
        return offer_record("introductory", None, discount, None)
    return None


def normalized_transaction(p: list, receipt: list) -> dict:
    """The verifier's full normalized transaction for in-app purchase `p` of `receipt`."""
    a = attr_map(p)
    r = attr_map(receipt)
    raw_type = a.get(1707, (None, None))[1]
    web = a.get(1711, (None, 0))[1]
    return transaction_record(
        "receipt",
        environment=ENVIRONMENTS[r[0][1]],
        bundle_id=r[2][1],
        product_id=a[1702][1],
        product_type=None if raw_type is None else PRODUCT_TYPES.get(raw_type, str(raw_type)),
        transaction_id=a[1703][1],
        original_transaction_id=a.get(1705, (None, None))[1],
        web_order_line_item_id=str(web) if web else None,
        quantity=a.get(1701, (None, None))[1],
        purchase_date=iso_ms(date_of(a[1704])),
        original_purchase_date=iso_ms(date_of(a.get(1706))),
        expires_date=iso_ms(date_of(a.get(1708))),
        revocation_date=iso_ms(date_of(a.get(1712))),
        offer=receipt_offer(a),
    )


def app_block(receipt: list) -> dict:
    r = attr_map(receipt)
    return {
        "bundle_id": r[2][1],
        "application_version": r[3][1],
        "original_application_version": r.get(19, (None, None))[1],
        "receipt_creation_date": iso_ms(date_of(r[12])),
        "expiration_date": iso_ms(date_of(r.get(21))),
        "original_purchase_date": iso_ms(date_of(r.get(18))),
        "preorder_date": None,
        "receipt_type": r[0][1],
        "app_item_id": r.get(1, (None, None))[1],
        "download_id": r.get(15, (None, None))[1],
        "version_external_identifier": r.get(16, (None, None))[1],
        "app_transaction_id": None,
        "original_platform": None,
        "device_verification": None,
        "device_verification_nonce": None,
    }


def verified(receipt: list, leaf: str = "leaf", root: str = "root", validated_at: str | None = None) -> dict:
    """The record of a verified receipt: validated at its creation date unless `validated_at` is given."""
    r = attr_map(receipt)
    return verified_record("receipt", ENVIRONMENTS[r[0][1]], validated_at or iso_ms(date_of(r[12])),
                           chain_record(PKI, leaf, root),
                           [normalized_transaction(p, receipt) for p in purchases_in_order(receipt)],
                           app=app_block(receipt))



try:
    from zoneinfo import ZoneInfo

    PACIFIC = ZoneInfo("America/Los_Angeles")
except Exception:  # no time zone database: the rules ReceiptKit implements
    PACIFIC = None


def pacific(millis: int) -> str:
    instant = EPOCH + dt.timedelta(milliseconds=millis)
    if PACIFIC is not None:
        return instant.astimezone(PACIFIC).strftime("%Y-%m-%d %H:%M:%S")
    year = instant.year

    def sunday(month, ordinal):
        first = dt.date(year, month, 1)
        d = first + dt.timedelta(days=(6 - first.weekday()) % 7)
        return d + dt.timedelta(weeks=ordinal - 1)
    start = dt.datetime.combine(sunday(3, 2), dt.time(10), dt.timezone.utc)
    end = dt.datetime.combine(sunday(11, 1), dt.time(9), dt.timezone.utc)
    offset = -7 if start <= instant < end else -8
    return (instant + dt.timedelta(hours=offset)).strftime("%Y-%m-%d %H:%M:%S")


def vr_dates(out: dict, name: str, millis: int | None) -> None:
    if millis is None:
        return
    out[name] = (EPOCH + dt.timedelta(milliseconds=millis)).strftime("%Y-%m-%d %H:%M:%S") + " Etc/GMT"
    out[name + "_ms"] = str(millis)
    out[name + "_pst"] = pacific(millis) + " America/Los_Angeles"


def verify_receipt_in_app(p: list) -> dict:
    """One `in_app` entry of a verifyReceipt body."""
    a = attr_map(p)
    entry: dict = {}
    if 1701 in a:
        entry["quantity"] = str(a[1701][1])
    entry["product_id"] = a[1702][1]
    entry["transaction_id"] = a[1703][1]
    if 1705 in a:
        entry["original_transaction_id"] = a[1705][1]
    vr_dates(entry, "purchase_date", date_of(a[1704]))
    vr_dates(entry, "original_purchase_date", date_of(a.get(1706)))
    vr_dates(entry, "expires_date", date_of(a.get(1708)))
    vr_dates(entry, "cancellation_date", date_of(a.get(1712)))
    if a.get(1711, (None, 0))[1]:
        entry["web_order_line_item_id"] = str(a[1711][1])
    entry["is_trial_period"] = "true" if a.get(1713, (None, 0))[1] == 1 else "false"
    if 1719 in a:
        entry["is_in_intro_offer_period"] = "true" if a[1719][1] == 1 else "false"
    if a.get(1721, (None, ""))[1]:
        entry["promotional_offer_id"] = a[1721][1]
    return entry


def verify_receipt_body(receipt: list) -> dict:
    """Apple's verifyReceipt response body for the receipt, by the rules the golden pair shows."""
    r = attr_map(receipt)
    body: dict = {"receipt_type": r[0][1]}
    if 1 in r:
        body["adam_id"] = r[1][1]
        body["app_item_id"] = r[1][1]
    body["bundle_id"] = r[2][1]
    body["application_version"] = r[3][1]
    if 15 in r:
        body["download_id"] = r[15][1]
    if 16 in r:
        body["version_external_identifier"] = r[16][1]
    vr_dates(body, "receipt_creation_date", date_of(r[12]))
    vr_dates(body, "original_purchase_date", date_of(r.get(18)))
    if 19 in r:
        body["original_application_version"] = r[19][1]
    vr_dates(body, "expiration_date", date_of(r.get(21)))
    body["in_app"] = [verify_receipt_in_app(p) for p in purchases_in_order(receipt)]
    return {"status": 0, "environment": ENVIRONMENTS[r[0][1]], "receipt": body}


# --------------------------------------------------------------------------------------------------
# vectors
# --------------------------------------------------------------------------------------------------


class Vectors(Manifest):
    """receipts/manifest.json, the files it names, and the receipts `openssl cms -verify` must accept."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, bytes] = {}
        # (name, file bytes, root cert name, epoch seconds) that `openssl cms -verify` must accept
        self.openssl_checks: list[tuple[str, bytes, str, int]] = []

    def write_file(self, filename: str, data: bytes) -> str:
        """Write receipts/<filename> (once, or again with the same bytes); return its TestVectors/ path."""
        if filename in self.files and self.files[filename] != data:
            raise SystemExit(f"{filename} written twice with different contents")
        self.files[filename] = data
        (OUT / filename).write_bytes(data)
        return f"receipts/{filename}"

    def add(self, name: str, filename: str, data: bytes, args: list[str], expected: dict, description: str) -> None:
        """Write `data` to receipts/<filename> and add a manifest entry for it."""
        self.entry(name, self.write_file(filename, data), args, expected, description)

    def reuse(self, name: str, filename: str, args: list[str], expected: dict, description: str) -> None:
        """Add an entry for a file an earlier vector wrote, with other arguments."""
        self.add(name, filename, self.files[filename], args, expected, description)

    def receipt(self, name: str, data: bytes, args: list[str], expected: dict, description: str) -> None:
        """Add `<name>.der`."""
        self.add(name, f"{name}.der", data, args, expected, description)

    def rejects(self, code: str, label: str, data: bytes, description: str, args: list[str] | None = None) -> None:
        """Add `<code>-<label>.der`, rejected with `code` (under `--root root.der` unless `args`)."""
        self.receipt(f"{code}-{label}", data, PKI.root_args() if args is None else args, rejected(code), description)


CREATED_S = rfc3339_ms(CREATED) // 1000
CHAIN = ("leaf", "intermediate", "root")


@dataclass
class Context:
    """What the builders share: the temp directory openssl works in, and the vectors so far."""

    tmp: Path
    v: Vectors

    def sign(self, attributes: list, name: str, *, certs: tuple[str, ...] = CHAIN, signer: str | None = None,
             key: str = "leaf", md: str = "sha256", sig_alg: str = "rsa", layout: str = "der", segments: int = 1,
             **m: object) -> bytes:
        """A receipt with these attributes: payload by `openssl asn1parse`, signature by `openssl cms`."""
        payload = make_payload(self.tmp, name, attributes)
        signer = signer or certs[0]
        signature = cms_signature(self.tmp, payload, signer, key, md)
        return envelope(payload, list(certs), signature, signer=signer, digest=md, sig_alg=sig_alg, layout=layout,
                        segments=segments, **m)

    @functools.cached_property
    def payload(self) -> bytes:
        """The payload of the full receipt, for vectors that change its envelope."""
        return make_payload(self.tmp, "envelope", app_attributes())

    @functools.cached_property
    def signature(self) -> bytes:
        """The leaf's SHA-256 signature over `payload`."""
        return cms_signature(self.tmp, self.payload, "leaf", "leaf", "sha256")

    def der(self, filename: str) -> bytes:
        """The bytes an earlier vector wrote to receipts/<filename>."""
        return self.v.files[filename]


# --------------------------------------------------------------------------------------------------
# builders: valid receipts
# --------------------------------------------------------------------------------------------------

# name, sign() options, leaf certificate, description
LAYOUTS = [
    ("receipt-sha256-der", {}, "leaf",
     "App Store-style receipt, SHA-256 digest, signatureAlgorithm rsaEncryption, DER, six in-app purchases "
     "covering every documented field and product type, plus Apple's undocumented attributes."),
    ("receipt-sha1-der", {"certs": ("leaf-sha1", "intermediate-sha1", "root"), "md": "sha1", "sig_alg": "sha1rsa"},
     "leaf-sha1", "SHA-1 digest, sha1WithRSAEncryption, DER, under SHA-1-signed leaf and intermediate certificates "
     "(every receipt before 2023 looks like this)."),
    ("receipt-sha256-ber", {"layout": "ber", "segments": 3, "sig_alg": "sha256rsa"}, "leaf",
     "Xcode's BER layout (indefinite lengths, payload in a constructed OCTET STRING of three segments), SHA-256."),
    ("receipt-sha1-ber", {"md": "sha1", "layout": "ber", "sig_alg": "rsa"}, "leaf",
     "BER layout with one segment, SHA-1 digest, rsaEncryption."),
]


def build_layouts(c: Context) -> None:
    """The full receipt in each digest and layout Apple has used; openssl cms -verify must accept each."""
    full = app_attributes()
    for name, options, leaf_name, description in LAYOUTS:
        data = c.sign(full, name, **options)
        c.v.receipt(name, data, PKI.root_args(), verified(full, leaf=leaf_name), description)
        c.v.openssl_checks.append((name, data, "root", CREATED_S))


def build_encodings_and_options(c: Context) -> None:
    """The SHA-256 DER receipt as base64 and in a request body, and under options that match it."""
    full = app_attributes()
    der256 = c.der("receipt-sha256-der.der")
    c.v.add("receipt-base64", "receipt-sha256-der.b64", (b64std(der256) + "\n").encode(), PKI.root_args(),
            verified(full), "receipt-sha256-der as one line of standard base64.")
    body = json.dumps({"receipt-data": b64std(der256), "password": "0123456789abcdef0123456789abcdef",
                       "exclude-old-transactions": True}, separators=(",", ":")) + "\n"
    c.v.add("receipt-request-body", "receipt-request-body.json", body.encode(), PKI.root_args(), verified(full),
            "A verifyReceipt request body: receipt-data, password and exclude-old-transactions (ignored).")
    file = "receipt-sha256-der.der"
    c.v.reuse("receipt-pin-sha256", file, ["--pin-sha256", sha256_hex(PKI.der["root"])], verified(full),
              "The embedded root is the anchor because its SHA-256 is pinned.")
    c.v.reuse("receipt-claims", file,
              PKI.root_args() + ["--bundle-id", BUNDLE, "--environment", "Sandbox", "--device-id", DEVICE_UUID],
              verified(full), "Bundle id, environment (ProductionSandbox is Sandbox) and device hash (UUID) all match.")
    c.v.reuse("receipt-device-lowercase", file, PKI.root_args() + ["--device-id", DEVICE_UUID.lower()], verified(full),
              "The UUID may be lowercase.")
    c.v.reuse("receipt-at-fixed-time", file, PKI.root_args() + ["--at", "2026-06-01T00:00:00Z"],
              verified(full, validated_at="2026-06-01T00:00:00.000Z"), "--at replaces the creation date.")


def build_receipt_types(c: Context) -> None:
    """Production and VPP sandbox receipts: the receipt type decides the environment."""
    production = app_attributes(receipt_type="Production", app_item_id=1234567890)
    c.v.receipt("receipt-production", c.sign(production, "receipt-production"),
                PKI.root_args() + ["--environment", "Production", "--app-apple-id", "1234567890"], verified(production),
                "Receipt type Production with an app item id: environment Production.")
    vpp = app_attributes(receipt_type="ProductionVPPSandbox")
    c.v.receipt("receipt-vpp-sandbox", c.sign(vpp, "receipt-vpp-sandbox"),
                PKI.root_args() + ["--environment", "Sandbox"], verified(vpp),
                "Volume Purchase Program sandbox receipt: environment Sandbox.")


def build_device_mac(c: Context) -> None:
    """A macOS receipt, its device hash over a MAC address given with and without colons."""
    mac = app_attributes(device=DEVICE_MAC)
    c.v.receipt("receipt-device-mac", c.sign(mac, "receipt-device-mac"), PKI.root_args() + ["--device-id", DEVICE_MAC],
                verified(mac), "macOS device hash over a 6-byte MAC address.")
    c.v.reuse("receipt-device-mac-colons", "receipt-device-mac.der",
              PKI.root_args() + ["--device-id", ":".join(DEVICE_MAC[i:i + 2] for i in range(0, 12, 2)).lower()],
              verified(mac), "The MAC address may be written with colons.")


def build_unusual_payloads(c: Context) -> None:
    """Unknown values and attributes Apple may add, and a receipt without purchases."""
    unusual_purchase = purchase("com.receiptkit.example.free", "2000000951239999", "2025-05-31T23:59:59.999+0000",
                                product_type=4, undocumented=False, extra=[(1799, 3, ("raw", b"\x01\x02\x03"))])
    unusual = app_attributes(purchases=[unusual_purchase], extra=[(99, 1, ("raw", b"")), (20, 1, ("utf8", ""))],
                             created="2025-06-01T14:00:00.5+0200")
    c.v.receipt("receipt-unknown-values", c.sign(unusual, "receipt-unknown-values"), PKI.root_args(), verified(unusual),
                "Product type 4 (kept raw as \"4\"), undocumented attributes with empty values, a fractional creation "
                "date with an offset (+0200), no original transaction id written separately.")
    empty = app_attributes(purchases=[])
    c.v.receipt("receipt-no-purchases", c.sign(empty, "receipt-no-purchases"), PKI.root_args(), verified(empty),
                "A receipt without in-app purchases.")


def build_xcode_receipt(c: Context) -> None:
    """An Xcode StoreKit Testing receipt, trusted only with its certificate as --root."""
    xcode = xcode_attributes()
    data = c.sign(xcode, "receipt-xcode", certs=("storekit",), key="storekit", layout="ber", sig_alg="sha256rsa")
    c.v.receipt("receipt-xcode", data, PKI.root_args("storekit") + ["--environment", "Xcode"],
                verified(xcode, leaf="storekit", root="storekit"),
                "Xcode StoreKit Testing receipt: BER, one self-signed certificate with a critical code-signing EKU, "
                "verified against that certificate as --root.")
    c.v.openssl_checks.append(("receipt-xcode", data, "storekit", CREATED_S))


def build_verifyreceipt(c: Context) -> None:
    """--format verifyreceipt: Apple's response bodies, and the statuses of the refusals it maps."""
    der256, prod = "receipt-sha256-der.der", "receipt-production.der"
    vr = ["--format", "verifyreceipt"]
    c.v.reuse("verifyreceipt-format", der256, PKI.root_args() + vr, verify_receipt_body(app_attributes()),
              "--format verifyreceipt renders Apple's verifyReceipt response body.")
    c.v.reuse("verifyreceipt-format-production", prod, PKI.root_args() + vr,
              verify_receipt_body(app_attributes(receipt_type="Production", app_item_id=1234567890)),
              "verifyReceipt body of a Production receipt.")
    c.v.reuse("verifyreceipt-21003", der256, vr, {"status": 21003, "error": {"code": "untrusted_root"}},
              "Not authenticated: status 21003.")
    c.v.reuse("verifyreceipt-21007", der256, PKI.root_args() + vr + ["--environment", "Production"],
              {"status": 21007, "error": {"code": "environment_mismatch"}},
              "A Sandbox receipt given to a Production verifier: status 21007.")
    c.v.reuse("verifyreceipt-21008", prod, PKI.root_args() + vr + ["--environment", "Sandbox"],
              {"status": 21008, "error": {"code": "environment_mismatch"}},
              "A Production receipt given to a Sandbox verifier: status 21008.")


# --------------------------------------------------------------------------------------------------
# builders: rejections
# --------------------------------------------------------------------------------------------------

SIGNED_ATTRIBUTE = tlv(0x30, tlv(0x06, OID_CONTENT_TYPE_ATTR) + tlv(0x31, tlv(0x06, OID_DATA)))


def envelope_defects() -> list[tuple[str, str, dict]]:
    """(name, description, envelope() mutations) of each envelope field Apple fixes, changed."""
    issuer, serial = issuer_and_serial(PKI.der["leaf"])
    return [
        ("content-type-enveloped-data", "ContentInfo.contentType is id-envelopedData.",
         {"content_type": OID_ENVELOPED_DATA}),
        ("signed-data-version-3", "SignedData.version is 3.", {"sd_version": 3}),
        ("signed-data-version-non-minimal", "SignedData.version is encoded 02 02 00 01.",
         {"sd_version_bytes": b"\x02\x02\x00\x01"}),
        ("signed-data-version-long-length", "SignedData.version's length is in the long form (02 81 01 01).",
         {"sd_version_bytes": b"\x02\x81\x01\x01"}),
        ("digest-md5", "The digest algorithms are MD5.",
         {"digest_algorithms": [algorithm(OID_MD5)], "si_digest": algorithm(OID_MD5)}),
        ("digest-parameters-absent", "The digest algorithms have no NULL parameters (OpenSSL's encoding).",
         {"digest_algorithms": [algorithm(OID_SHA256, None)], "si_digest": algorithm(OID_SHA256, None)}),
        ("digest-algorithms-mismatch", "digestAlgorithms lists SHA-1, the signer used SHA-256.",
         {"digest_algorithms": [algorithm(OID_SHA1)]}),
        ("digest-algorithms-two", "digestAlgorithms lists SHA-256 and SHA-1.",
         {"digest_algorithms": [algorithm(OID_SHA256), algorithm(OID_SHA1)]}),
        ("digest-algorithms-empty", "digestAlgorithms is empty.", {"digest_algorithms": []}),
        ("econtent-type-signed-data", "eContentType is id-signedData instead of id-data.",
         {"econtent_type": OID_SIGNED_DATA}),
        ("signer-info-version-3", "SignerInfo.version is 3.", {"si_version": 3}),
        ("signature-algorithm-ecdsa", "signatureAlgorithm is ecdsa-with-SHA256.",
         {"si_signature_algorithm": algorithm(OID_ECDSA_SHA256, None)}),
        ("signature-algorithm-sha1-for-sha256", "signatureAlgorithm sha1WithRSAEncryption with a SHA-256 digest.",
         {"si_signature_algorithm": algorithm(OID_SHA1_RSA)}),
        ("signature-algorithm-parameters-absent", "signatureAlgorithm rsaEncryption without NULL parameters.",
         {"si_signature_algorithm": algorithm(OID_RSA, None)}),
        ("signed-attributes", "The SignerInfo has signed attributes.", {"signed_attributes": SIGNED_ATTRIBUTE}),
        ("unsigned-attributes", "The SignerInfo has unsigned attributes.", {"unsigned_attributes": SIGNED_ATTRIBUTE}),
        ("crls", "SignedData carries a (dummy) CRL.", {"crls": tlv(0x30, b"")}),
        ("two-signers", "SignedData has two SignerInfos.", {"two_signers": True}),
        ("no-certificates", "SignedData carries no certificates.", {"no_certificates": True}),
        ("trailing-byte", "One zero byte follows the ContentInfo.", {"trailing": b"\x00"}),
        ("signer-serial-changed", "The SignerInfo names a serial number no certificate has.",
         {"sid_serial": serial[:-1] + bytes([serial[-1] ^ 0x02])}),
        ("signer-issuer-case", "The SignerInfo's issuer name differs from the leaf's in case only.",
         {"sid_issuer": issuer.replace(b"ReceiptKit Test Worldwide", b"RECEIPTKIT Test Worldwide")}),
        ("indefinite-length-in-der", "A DER receipt whose signerInfos SET has an indefinite length.",
         {"signer_infos_indefinite": True}),
        ("ber-definite-signed-data", "Xcode's BER layout, but SignedData has a definite length.",
         {"layout": "ber", "definite_signed_data": True}),
        ("ber-empty-segment", "Xcode's BER layout with an empty payload segment.",
         {"layout": "ber", "empty_segment": True}),
    ]


def build_envelope_defects(c: Context) -> None:
    """malformed_receipt: the signed full payload in an envelope with one field changed."""
    for name, description, mutations in envelope_defects():
        c.v.rejects("malformed_receipt", name, envelope(c.payload, list(CHAIN), c.signature, **mutations), description)


def build_undecodable_receipts(c: Context) -> None:
    """malformed_receipt: truncated DER, OpenSSL's own CMS layout, and base64 that is not a receipt."""
    code = "malformed_receipt"
    der256 = c.der("receipt-sha256-der.der")
    c.v.rejects(code, "truncated", der256[:-1], "receipt-sha256-der without its last byte.")
    c.v.rejects(code, "openssl-cms-layout", openssl_cms_raw(c.tmp, c.payload),
                "The same receipt in OpenSSL's own CMS layout (digest algorithms without NULL parameters): "
                "not what Apple writes.")
    c.v.add(f"{code}-not-base64", f"{code}-not-base64.b64", (b64std(der256)[:-4] + "A===\n").encode(), PKI.root_args(),
            rejected(code), "Base64 with misplaced padding.")
    c.v.add(f"{code}-base64-not-a-receipt", f"{code}-base64-not-a-receipt.b64",
            (b64std(b"not a receipt") + "\n").encode(), PKI.root_args(), rejected(code),
            "Valid base64 of bytes that are not DER.")


def coins_purchase() -> list:
    """A consumable in-app purchase, for the in-app payload defects."""
    return purchase("com.receiptkit.example.coins.100", "2000000951230001", "2025-05-02T09:00:00Z")


def payload_defects() -> list[tuple[str, list, str]]:
    """(name, attributes, description) of each payload rule, broken in a properly signed receipt."""
    in_app_missing = [a for a in coins_purchase() if a[0] != 1703]
    in_app_quantity = [(t, ver, ("utf8", "1")) if t == 1701 else (t, ver, val) for t, ver, val in coins_purchase()]
    return [
        ("missing-bundle-id", app_attributes(drop=(2,)), "Attribute 2 (bundle id) is missing."),
        ("missing-creation-date", app_attributes(drop=(12,)), "Attribute 12 (creation date) is missing."),
        ("empty-creation-date", app_attributes(replace={12: ("ia5", "")}), "Attribute 12 is an empty string."),
        ("bundle-id-ia5string", app_attributes(replace={2: ("ia5", BUNDLE)}),
         "Attribute 2 is an IA5String instead of a UTF8String."),
        ("creation-date-not-rfc3339", app_attributes(replace={12: ("ia5", "2025-06-01 12:00:00")}),
         "Attribute 12 is not an RFC 3339 date."),
        ("creation-date-month-13", app_attributes(replace={12: ("ia5", "2025-13-01T12:00:00Z")}),
         "Attribute 12 has month 13."),
        ("app-item-id-utf8string", app_attributes(replace={1: ("utf8", "0")}),
         "Attribute 1 (app item id) is a UTF8String instead of an INTEGER."),
        ("bundle-id-invalid-utf8", app_attributes(replace={2: ("raw", tlv(0x0C, b"com.\xff.example"))}),
         "Attribute 2 is not valid UTF-8."),
        ("bundle-id-trailing-bytes", app_attributes(replace={2: ("raw", tlv(0x0C, BUNDLE.encode()) + b"\x00")}),
         "Attribute 2's value has a byte after its UTF8String."),
        ("duplicate-bundle-id", app_attributes(extra=[(2, 1, ("utf8", "com.receiptkit.other"))]),
         "Attribute 2 appears twice."),
        ("integer-nine-bytes", app_attributes(replace={1: ("raw", tlv(0x02, b"\x01" + bytes(8)))}),
         "Attribute 1 is an INTEGER wider than 64 bits."),
        ("integer-non-minimal", app_attributes(replace={1: ("raw", b"\x02\x02\x00\x01")}),
         "Attribute 1 is an INTEGER with a superfluous leading zero."),
        ("purchase-missing-transaction-id", app_attributes(purchases=[in_app_missing]),
         "An in-app purchase lacks attribute 1703 (transaction id)."),
        ("purchase-quantity-utf8string", app_attributes(purchases=[in_app_quantity]),
         "An in-app purchase's quantity (1701) is a UTF8String."),
        ("purchase-not-a-set", app_attributes(purchases=[]) + [(17, 1, ("raw", tlv(0x30, b"")))],
         "Attribute 17 holds a SEQUENCE instead of a SET."),
    ]


def build_payload_defects(c: Context) -> None:
    """malformed_receipt: properly signed payloads that break one payload rule."""
    for name, attributes, description in payload_defects():
        c.v.rejects("malformed_receipt", name, c.sign(attributes, f"malformed_receipt-{name}"), description)
    # An attribute whose value is an INTEGER instead of an OCTET STRING (genconf would need a
    # section per shape; the script's encoder builds it and OpenSSL signs it as usual).
    odd_payload = der_set_of([encode_attribute(a) for a in app_attributes()]
                             + [tlv(0x30, der_int(9) + der_int(1) + der_int(5))])
    odd_signature = cms_signature(c.tmp, odd_payload, "leaf", "leaf", "sha256")
    c.v.rejects("malformed_receipt", "attribute-value-not-octet-string",
                envelope(odd_payload, list(CHAIN), odd_signature),
                "An attribute's value is an INTEGER instead of an OCTET STRING.")


def build_invalid_signature(c: Context) -> None:
    """invalid_signature: payload or signature changed, another key, the wrong digest, a short signature."""
    code = "invalid_signature"
    payload, signature, chain = c.payload, c.signature, list(CHAIN)
    tampered_payload = payload.replace(b"com.receiptkit.example.coins.100", b"com.receiptkit.example.coins.900")
    assert tampered_payload != payload
    c.v.rejects(code, "tampered-payload", envelope(tampered_payload, chain, signature),
                "One product id of the signed payload changed after signing.")
    bad_sig = signature[:-1] + bytes([signature[-1] ^ 0x01])
    c.v.rejects(code, "tampered-signature", envelope(payload, chain, bad_sig), "One bit of the signature flipped.")
    # openssl cms refuses a key that does not match the signer certificate: sign with openssl dgst.
    other_sig = run([OPENSSL, "dgst", "-sha256", "-sign", str(PKI.key_path("other"))], data=payload).stdout
    c.v.rejects(code, "wrong-key", envelope(payload, chain, other_sig), "Signed with another key than the leaf's.")
    sha1_signature = cms_signature(c.tmp, payload, "leaf", "leaf", "sha1")
    c.v.rejects(code, "sha1-labelled-sha256", envelope(payload, chain, sha1_signature),
                "A SHA-1 signature in an envelope that says SHA-256.")
    c.v.rejects(code, "truncated-signature", envelope(payload, chain, signature[:-1]),
                "The signature is one byte short of the modulus.")


def chain_vector(c: Context, code: str, name: str, certs: tuple[str, ...], description: str, *,
                 key: str = "leaf", args: list[str] | None = None, signer: str | None = None) -> None:
    """`<code>-<name>`: the full payload signed by `signer` (default certs[0]) with `certs` embedded."""
    signer = signer or certs[0]
    sig = cms_signature(c.tmp, c.payload, signer, key, "sha256") if key != "leaf" or signer != "leaf" else c.signature
    c.v.rejects(code, name, envelope(c.payload, list(certs), sig, signer=signer, digest="sha256"), description, args)


def build_chain_defects(c: Context) -> None:
    """invalid_chain_length, invalid_chain, untrusted_root: embedded chains or anchors Apple's profile refuses."""
    chain_vector(c, "invalid_chain_length", "two", ("leaf", "intermediate"), "Only leaf and intermediate are embedded.")
    chain_vector(c, "invalid_chain_length", "four", ("leaf", "intermediate", "root", "root-sibling"),
                 "Four certificates are embedded.")
    chain_vector(c, "invalid_chain", "leaf-ca", ("leaf-ca", "intermediate", "root"), "The leaf is a CA.")
    chain_vector(c, "invalid_chain", "leaf-keyusage-keyencipherment",
                 ("leaf-keyusage-keyencipherment", "intermediate", "root"),
                 "The leaf's keyUsage is keyEncipherment only.")
    chain_vector(c, "invalid_chain", "leaf-ec", ("leaf-ec", "intermediate", "root"), "The leaf has an EC P-256 key.",
                 key="leaf-ec")
    chain_vector(c, "invalid_chain", "leaf-rsa1024", ("leaf-rsa1024", "intermediate", "root"),
                 "The leaf has a 1024-bit RSA key.", key="leaf-rsa1024")
    chain_vector(c, "invalid_chain", "intermediate-not-ca",
                 ("leaf-under-intermediate-not-ca", "intermediate-not-ca", "root"), "The intermediate is not a CA.")
    chain_vector(c, "invalid_chain", "signer-not-first", ("intermediate", "leaf", "root"),
                 "The signer is embedded second, after the intermediate.", signer="leaf")
    chain_vector(c, "untrusted_root", "built-in-pins", CHAIN,
                 "The test root is not Apple's: the built-in pins refuse it.", args=[])
    chain_vector(c, "untrusted_root", "lookalike-root", ("leaf", "intermediate", "lookalike-root"),
                 "The embedded root has the root's name but another key; --root is the real one.")
    chain_vector(c, "untrusted_root", "root-sibling", ("leaf", "intermediate", "root-sibling"),
                 "The embedded root has the root's name and key but is another certificate: a receipt's certificates "
                 "are unsigned, so a --root must be byte-identical to the embedded root (a JWS would verify).")
    chain_vector(c, "untrusted_root", "pin-mismatch", CHAIN, "--pin-sha256 names the lookalike root.",
                 args=["--pin-sha256", sha256_hex(PKI.der["lookalike-root"])])
    chain_vector(c, "untrusted_root", "storekit-root-only", CHAIN, "--root is the StoreKit certificate.",
                 args=PKI.root_args("storekit"))


def build_xcode_untrusted(c: Context) -> None:
    """untrusted_root: the Xcode receipt without its certificate as --root."""
    xcode = "receipt-xcode.der"
    c.v.reuse("untrusted_root-xcode-without-root", xcode, [], rejected("untrusted_root"),
              "An Xcode receipt under the built-in pins.")
    c.v.reuse("untrusted_root-xcode-pinned", xcode, ["--pin-sha256", sha256_hex(PKI.der["storekit"])],
              rejected("untrusted_root"), "An Xcode receipt verifies only against a --root, never under a pin.")
    c.v.reuse("untrusted_root-xcode-other-root", xcode, PKI.root_args(), rejected("untrusted_root"),
              "An Xcode receipt against the App Store test root.")


def build_validity_period(c: Context) -> None:
    """certificate_expired, certificate_not_yet_valid: a leaf outside its validity, or another --at."""
    der256 = "receipt-sha256-der.der"
    chain_vector(c, "certificate_expired", "leaf-expired", ("leaf-expired", "intermediate", "root"),
                 "The leaf expired before the creation date.")
    c.v.reuse("certificate_expired-at-2030", der256, PKI.root_args() + ["--at", "2030-01-01T00:00:00Z"],
              rejected("certificate_expired"), "Validated after the leaf expired.")
    chain_vector(c, "certificate_not_yet_valid", "leaf-not-yet-valid", ("leaf-not-yet-valid", "intermediate", "root"),
                 "The leaf becomes valid after the creation date.")
    c.v.reuse("certificate_not_yet_valid-at-2023", der256, PKI.root_args() + ["--at", "2023-06-01T00:00:00Z"],
              rejected("certificate_not_yet_valid"), "Validated before the leaf became valid.")


def build_missing_apple_extension(c: Context) -> None:
    """missing_apple_extension: a leaf or intermediate without Apple's marker OID."""
    chain_vector(c, "missing_apple_extension", "leaf", ("leaf-no-marker", "intermediate", "root"),
                 "The leaf lacks 1.2.840.113635.100.6.11.1.")
    chain_vector(c, "missing_apple_extension", "intermediate",
                 ("leaf-under-intermediate-no-marker", "intermediate-no-marker", "root"),
                 "The intermediate lacks 1.2.840.113635.100.6.2.1.")


def build_claim_mismatches(c: Context) -> None:
    """bundle_id_mismatch, environment_mismatch, app_apple_id_mismatch: claims a valid receipt does not meet."""
    c.v.reuse("bundle_id_mismatch-receipt", "receipt-sha256-der.der",
              PKI.root_args() + ["--bundle-id", "com.receiptkit.other"], rejected("bundle_id_mismatch"),
              "--bundle-id differs.")
    c.v.reuse("environment_mismatch-sandbox-as-production", "receipt-sha256-der.der",
              PKI.root_args() + ["--environment", "Production"], rejected("environment_mismatch"),
              "A ProductionSandbox receipt for a Production verifier.")
    c.v.reuse("environment_mismatch-xcode-as-sandbox", "receipt-xcode.der",
              PKI.root_args("storekit") + ["--environment", "Sandbox"], rejected("environment_mismatch"),
              "An Xcode receipt for a Sandbox verifier.")
    c.v.reuse("app_apple_id_mismatch-receipt", "receipt-production.der", PKI.root_args() + ["--app-apple-id", "1"],
              rejected("app_apple_id_mismatch"), "The app item id (attribute 1) is not --app-apple-id.")


def build_device_mismatches(c: Context) -> None:
    """device_hash_mismatch: another device's UUID or MAC address, or a UUID for a MAC receipt."""
    for name, file, device, description in [
        ("uuid", "receipt-sha256-der.der", OTHER_UUID, "Another device's UUID."),
        ("mac", "receipt-device-mac.der", OTHER_MAC, "Another MAC address."),
        ("uuid-for-mac-receipt", "receipt-device-mac.der", DEVICE_UUID,
         "A UUID for a receipt hashed with a MAC address."),
    ]:
        c.v.reuse(f"device_hash_mismatch-{name}", file, PKI.root_args() + ["--device-id", device],
                  rejected("device_hash_mismatch"), description)


def build_size_and_kind(c: Context) -> None:
    """input_too_large under --max-receipt-size, and unrecognized_input for a receipt given --kind transaction."""
    small = PKI.root_args() + ["--max-receipt-size", "1024"]
    c.v.reuse("input_too_large-max-receipt-size", "receipt-sha256-der.der", small, rejected("input_too_large"),
              "--max-receipt-size 1024.")
    c.v.reuse("input_too_large-base64", "receipt-sha256-der.b64", small, rejected("input_too_large"),
              "--max-receipt-size 1024 for a base64 receipt.")
    c.v.reuse("unrecognized_input-kind-transaction", "receipt-sha256-der.der",
              PKI.root_args() + ["--kind", "transaction"], rejected("unrecognized_input"),
              "A receipt cannot be verified as a JWS transaction.")


# Every builder, in manifest order; later builders reuse files of earlier ones.
BUILDERS: list[Callable[[Context], None]] = [
    build_layouts,
    build_encodings_and_options,
    build_receipt_types,
    build_device_mac,
    build_unusual_payloads,
    build_xcode_receipt,
    build_verifyreceipt,
    build_envelope_defects,
    build_undecodable_receipts,
    build_payload_defects,
    build_invalid_signature,
    build_chain_defects,
    build_xcode_untrusted,
    build_validity_period,
    build_missing_apple_extension,
    build_claim_mismatches,
    build_device_mismatches,
    build_size_and_kind,
]


def build_vectors(tmp: Path) -> Vectors:
    """Run every builder; the caller writes the manifest."""
    c = Context(tmp, Vectors())
    for build in BUILDERS:
        build(c)
    return c.v


# --------------------------------------------------------------------------------------------------
# self-check
# --------------------------------------------------------------------------------------------------


def self_check(tmp: Path, v: Vectors) -> None:
    """openssl cms -verify over the valid receipts, and the files the manifest names; exit non-zero on a problem."""
    problems = []
    for name, data, root, at in v.openssl_checks:
        path = tmp / "check.der"
        path.write_bytes(data)
        args = [OPENSSL, "cms", "-verify", "-binary", "-inform", "DER", "-in", str(path), "-CAfile",
                str(tmp / f"{root}.pem"), "-purpose", "any", "-attime", str(at), "-out", str(tmp / "content.der")]
        proc = run(args, check=False)
        if proc.returncode != 0:
            problems.append(f"{name}: openssl cms -verify refuses it: {proc.stderr.decode(errors='replace')[:200]}")
    finish_self_check(problems + v.missing_files(),
                      f"{len(v.openssl_checks)} receipts verified by openssl cms -verify")


def main() -> None:
    generate(__doc__, PKI, OUT, stale=lambda f: f.suffix in (".der", ".b64", ".json"), build=build_vectors,
             self_check=self_check)


if __name__ == "__main__":
    main()
