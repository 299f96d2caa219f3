"""What both test-vector generators share: the test PKI, encodings, DER, and the manifest schema.

`scripts/make-test-vectors.py` (JWS, EC test PKI in TestVectors/pki) and
`scripts/make-receipt-vectors.py` (legacy receipts, RSA test PKI in TestVectors/receipts/pki)
import this module. It needs only python3 (standard library) and the `openssl` command-line tool
(OpenSSL 3.0 or later); `OPENSSL` in the environment names another binary.

- `TestPKI` keeps each key in a committed PEM file (regenerated only with `--new-pki`) and issues
  every certificate with `openssl req` and `openssl ca` from an explicit specification (`CertSpec`):
  subject, issuer, extension file, fixed dates, digest, and a serial derived from the name.
- The expectation helpers (`transaction_record`, `verified_record`, `rejected`, `chain_record`)
  write the verifier's output record in the one key order the manifests use.
- `Manifest` collects the entries of a `manifest.json` and checks the files they name.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Callable, TypeVar

REPO = Path(__file__).resolve().parent.parent
TV = REPO / "TestVectors"

OPENSSL = os.environ.get("OPENSSL", "openssl")

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)

# --------------------------------------------------------------------------------------------------
# processes and encodings
# --------------------------------------------------------------------------------------------------


def run(args: list[str], data: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run a command with `data` on stdin; with `check`, print its stderr and exit when it fails."""
    proc = subprocess.run(args, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if check and proc.returncode != 0:
        sys.stderr.write(f"command failed: {' '.join(args)}\n{proc.stderr.decode(errors='replace')}\n")
        raise SystemExit(1)
    return proc


def openssl_version() -> str:
    """The `openssl version` line, printed by each generator before it starts."""
    return run([OPENSSL, "version"]).stdout.decode().strip()


def b64u(data: bytes) -> str:
    """base64url without padding (RFC 7515 section 2)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64u_decode(text: str) -> bytes:
    """Decode base64url with or without padding."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64std(data: bytes) -> str:
    """Standard base64 with padding (RFC 7515 section 4.1.6, x5c; receipts)."""
    return base64.b64encode(data).decode("ascii")


def cjson(obj: object) -> bytes:
    """Compact JSON, UTF-8."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    """Lowercase hex SHA-256, as the verifier prints fingerprints."""
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------------------------------
# dates
# --------------------------------------------------------------------------------------------------


def millis_since_epoch(t: dt.datetime) -> int:
    """An aware datetime -> whole milliseconds since the epoch (floored)."""
    delta = t - EPOCH
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000


def ms(iso: str) -> int:
    """'2025-06-01T12:00:00.123Z' -> milliseconds since the epoch."""
    return millis_since_epoch(dt.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc))


def rfc3339_ms(text: str) -> int:
    """An RFC 3339 date as receipts write it ('Z', '+0100' or '+01:00', optional fraction) -> ms."""
    t = text
    if t.endswith("Z"):
        t = t[:-1] + "+00:00"
    elif len(t) >= 5 and t[-5] in "+-" and t[-3] != ":":
        t = t[:-2] + ":" + t[-2:]
    return millis_since_epoch(dt.datetime.fromisoformat(t))


def iso_ms(value: int | float | None) -> str | None:
    """Apple millisecond date (int or fractional) -> ISO 8601 UTC with exactly 3 digits, floored."""
    if value is None:
        return None
    millis = math.floor(Decimal(repr(value)) if isinstance(value, float) else Decimal(value))
    secs, rem = divmod(millis, 1000)
    t = EPOCH + dt.timedelta(seconds=secs)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % rem


def asn1_time(day: str) -> str:
    """'2024-01-01' -> '20240101000000Z' (openssl ca -startdate/-enddate)."""
    return day.replace("-", "") + "000000Z"


def iso_day(day: str) -> str:
    """'2024-01-01' -> '2024-01-01T00:00:00.000Z'."""
    return day + "T00:00:00.000Z"


# --------------------------------------------------------------------------------------------------
# DER
# --------------------------------------------------------------------------------------------------

NULL = b"\x05\x00"


def der_length(n: int) -> bytes:
    """A DER length: short form below 128, else the minimal long form."""
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def tlv(tag: int, content: bytes) -> bytes:
    """A definite-length element."""
    return bytes([tag]) + der_length(len(content)) + content


def indefinite(tag: int, content: bytes) -> bytes:
    """A BER indefinite-length element (ends with end-of-contents)."""
    return bytes([tag, 0x80]) + content + b"\x00\x00"


def int_contents(n: int) -> bytes:
    """The minimal two's-complement contents of an INTEGER."""
    size = 1
    while True:
        try:
            return n.to_bytes(size, "big", signed=True)
        except OverflowError:
            size += 1


def der_int(n: int) -> bytes:
    """INTEGER n."""
    return tlv(0x02, int_contents(n))


def oid(dotted: str) -> bytes:
    """The contents of an OBJECT IDENTIFIER ('1.2.840...')."""
    parts = [int(p) for p in dotted.split(".")]
    body = bytes([40 * parts[0] + parts[1]])
    for p in parts[2:]:
        chunk = [p & 0x7F]
        p >>= 7
        while p:
            chunk.insert(0, 0x80 | (p & 0x7F))
            p >>= 7
        body += bytes(chunk)
    return body


def der_set_of(elements: list[bytes]) -> bytes:
    """DER SET OF: elements sorted by their encodings (X.690 section 11.6)."""
    return tlv(0x31, b"".join(sorted(elements)))


def parse_tlv(data: bytes, i: int) -> tuple[int, int, int]:
    """(tag, contents start, contents end) of the definite-length element at i."""
    tag = data[i]
    first = data[i + 1]
    if first < 0x80:
        return tag, i + 2, i + 2 + first
    n = first & 0x7F
    length = int.from_bytes(data[i + 2:i + 2 + n], "big")
    return tag, i + 2 + n, i + 2 + n + length


def children(data: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """(tag, element start, contents start, contents end) of each element in [start, end)."""
    out = []
    i = start
    while i < end:
        tag, cs, ce = parse_tlv(data, i)
        out.append((tag, i, cs, ce))
        i = ce
    return out


def parse_ecdsa_sig(der: bytes) -> tuple[int, int]:
    """ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER } -> (r, s)."""
    tag, start, end = parse_tlv(der, 0)
    assert tag == 0x30 and end == len(der), "not one SEQUENCE"
    parts = children(der, start, end)
    assert [p[0] for p in parts] == [0x02, 0x02], "not two INTEGERs"
    r, s = (int.from_bytes(der[p[2]:p[3]], "big") for p in parts)
    return r, s


def encode_ecdsa_sig(r: int, s: int) -> bytes:
    """(r, s) -> ECDSA-Sig-Value, the form `openssl dgst -verify` reads."""
    return tlv(0x30, der_int(r) + der_int(s))


def raw_sig(r: int, s: int, size: int = 32) -> bytes:
    """JWS ECDSA signature: r || s, `size` bytes each (RFC 7518 section 3.4)."""
    return r.to_bytes(size, "big") + s.to_bytes(size, "big")


# --------------------------------------------------------------------------------------------------
# test PKI
# --------------------------------------------------------------------------------------------------

LEAF_MARKER = "1.2.840.113635.100.6.11.1 = ASN1:NULL"
INTER_MARKER = "1.2.840.113635.100.6.2.1 = ASN1:NULL"

# Extension files (`openssl ca -extfile`) shared by both PKIs.
EXT_ROOT = "basicConstraints = critical, CA:TRUE\nkeyUsage = critical, keyCertSign, cRLSign\nsubjectKeyIdentifier = hash\n"
INTER_BASE = "keyUsage = critical, keyCertSign, cRLSign\nsubjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid:always\n"
EXT_INTER = "basicConstraints = critical, CA:TRUE, pathlen:0\n" + INTER_BASE + INTER_MARKER + "\n"
EXT_INTER_NO_MARKER = "basicConstraints = critical, CA:TRUE, pathlen:0\n" + INTER_BASE
EXT_INTER_NOT_CA = "basicConstraints = critical, CA:FALSE\n" + INTER_BASE + INTER_MARKER + "\n"
LEAF_BASE = "subjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid:always\n"
EXT_LEAF = "basicConstraints = critical, CA:FALSE\nkeyUsage = critical, digitalSignature\n" + LEAF_BASE + LEAF_MARKER + "\n"
EXT_LEAF_NO_MARKER = "basicConstraints = critical, CA:FALSE\nkeyUsage = critical, digitalSignature\n" + LEAF_BASE
EXT_LEAF_CA = "basicConstraints = critical, CA:TRUE\nkeyUsage = critical, digitalSignature\n" + LEAF_BASE + LEAF_MARKER + "\n"
EXT_LEAF_KEYENC = "basicConstraints = critical, CA:FALSE\nkeyUsage = critical, keyEncipherment\n" + LEAF_BASE + LEAF_MARKER + "\n"
EXT_LEAF_NO_KU = "basicConstraints = critical, CA:FALSE\n" + LEAF_BASE + LEAF_MARKER + "\n"

ORG = "O=ReceiptKit Test (NOT FOR PRODUCTION)/C=US"

# Validity of the root, intermediate and leaf in both PKIs (not before, not after).
ROOT_DATES = ("2020-01-01", "2045-01-01")
INTER_DATES = ("2021-01-01", "2040-01-01")
LEAF_DATES = ("2024-01-01", "2027-01-01")

REQ_CNF = """[ req ]
distinguished_name = dn
string_mask = utf8only
utf8 = yes
[ dn ]
"""

CA_CNF = """[ ca ]
default_ca = test_ca
[ test_ca ]
dir = {dir}
database = $dir/index.txt
new_certs_dir = $dir/newcerts
serial = $dir/serial
policy = policy_any
unique_subject = no
preserve = yes
email_in_dn = no
copy_extensions = none
default_md = {md}
[ policy_any ]
commonName = supplied
organizationalUnitName = optional
organizationName = optional
countryName = optional
"""


@dataclass(frozen=True)
class CertSpec:
    """One certificate of a test PKI."""

    name: str  # file name without .der
    key: str  # key name (its PEM file without .key)
    subject: str  # openssl -subj form
    issuer: str | None  # issuing certificate's name; None = self-signed
    extensions: str  # extension file body
    dates: tuple[str, str]  # not before, not after ('YYYY-MM-DD', midnight UTC)
    digest: str  # openssl ca -md


@dataclass
class TestPKI:
    """A test CA hierarchy: committed keys, certificates re-issued from `certs` on every run."""

    directory: Path
    keys: dict[str, str]  # key name -> "EC:P-256", "RSA:2048", ...
    certs: list[CertSpec]
    title: str  # "test PKI": in the key banner and the serial label
    generator: str  # the script that writes it, named in the key banner
    serial_bytes: int  # serial = SHA-256("ReceiptKit <title> serial:" + name), this many bytes, positive and odd
    default_md: str  # the CA configuration's default_md (every issue passes -md anyway)
    fingerprinted: tuple[str, ...]  # certificates listed in fingerprints.json
    der: dict[str, bytes] = field(default_factory=dict)

    def key_path(self, name: str) -> Path:
        """The PEM file of key `name`."""
        return self.directory / f"{name}.key"

    def spec(self, name: str) -> CertSpec:
        """The specification of certificate `name`."""
        return next(s for s in self.certs if s.name == name)

    def not_after(self, name: str) -> str:
        """Certificate `name`'s notAfter as the verifier prints it."""
        return iso_day(self.spec(name).dates[1])

    def rel(self, name: str) -> str:
        """Certificate `name`'s path relative to the repository root (verify-receipt arguments)."""
        return f"{self.directory.relative_to(REPO)}/{name}.der"

    def root_args(self, name: str = "root") -> list[str]:
        """`--root` with certificate `name` as the trust anchor."""
        return ["--root", self.rel(name)]

    def build(self, tmp: Path, new_pki: bool,
              retry: dict[str, Callable[[bytes], bool]] | None = None) -> dict[str, bytes]:
        """Write every certificate's DER and fingerprints.json; return the DER by name.

        Deletes the old certificates (and with `new_pki` the keys), makes missing keys, and issues
        the certificates in order. `retry` re-issues a certificate (up to 20 times) until its DER
        satisfies the predicate: ECDSA signature lengths vary.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        for f in self.directory.iterdir():
            if f.suffix == ".der" or f.name == "fingerprints.json" or (new_pki and f.suffix == ".key"):
                f.unlink()
        self.ensure_keys(new_pki)
        for spec in self.certs:
            self.issue(tmp, spec)
        for name, accept in (retry or {}).items():
            self.reissue_until(tmp, name, accept)
        self.der = {s.name: (self.directory / f"{s.name}.der").read_bytes() for s in self.certs}
        fps = {f"{n}.der": sha256_hex(self.der[n]) for n in self.fingerprinted}
        (self.directory / "fingerprints.json").write_text(json.dumps(fps, indent=2) + "\n")
        return self.der

    def key_kind(self, path: Path) -> str | None:
        """"EC:<curve>" or "RSA:<bits>" of a PEM private key."""
        text = run([OPENSSL, "pkey", "-in", str(path), "-noout", "-text"]).stdout.decode()
        for line in text.splitlines():
            if line.strip().startswith("NIST CURVE:"):
                return "EC:" + line.split(":", 1)[1].strip()
        if "modulus:" in text and text.startswith("Private-Key: ("):
            return "RSA:" + text[len("Private-Key: ("):].split(" ")[0]
        return None

    def ensure_keys(self, new_pki: bool) -> None:
        """Check every committed key's kind; make the keys that are missing (all with `new_pki`)."""
        for name, kind in self.keys.items():
            path = self.key_path(name)
            if path.exists() and not new_pki:
                found = self.key_kind(path)
                if found != kind:
                    raise SystemExit(f"{path}: expected a {kind} key, found {found}; rerun with --new-pki")
                continue
            algorithm, parameter = kind.split(":")
            if algorithm == "RSA":
                args = ["-algorithm", "RSA", "-pkeyopt", f"rsa_keygen_bits:{parameter}"]
            else:
                args = ["-algorithm", "EC", "-pkeyopt", f"ec_paramgen_curve:{parameter}",
                        "-pkeyopt", "ec_param_enc:named_curve"]
            pem = run([OPENSSL, "genpkey"] + args).stdout.decode()
            path.write_text(self.key_banner() + pem)
            print(f"  new key {path.relative_to(REPO)} ({kind})")

    def key_banner(self) -> str:
        """The comment lines above every new PEM key (OpenSSL skips them)."""
        return (f"# TEST KEY ONLY. ReceiptKit {self.title} ({self.directory.relative_to(REPO)}), generated by\n"
                f"# scripts/{self.generator}. Published on purpose; never trust anything it signs.\n")

    def serial(self, name: str) -> str:
        """Certificate `name`'s serial in hex: fixed across runs, positive, non-zero."""
        label = f"ReceiptKit {self.title} serial:".encode()
        digest = hashlib.sha256(label + name.encode()).digest()[:self.serial_bytes]
        value = (int.from_bytes(digest, "big") >> 1) | 1
        return "%0*X" % (2 * self.serial_bytes, value)

    def issue(self, tmp: Path, spec: CertSpec) -> None:
        """Issue one certificate with `openssl req` and `openssl ca` in a throwaway CA directory.

        Writes `<directory>/<name>.der` and `tmp/<name>.pem` (the issuer of later certificates and
        the input of the self-checks).
        """
        work = tmp / f"ca-{spec.name}"
        (work / "newcerts").mkdir(parents=True)
        (work / "index.txt").write_text("")
        (work / "index.txt.attr").write_text("unique_subject = no\n")
        (work / "serial").write_text(self.serial(spec.name) + "\n")
        (work / "ca.cnf").write_text(CA_CNF.format(dir=work, md=self.default_md))
        (work / "req.cnf").write_text(REQ_CNF)
        (work / "ext.cnf").write_text("[ ext ]\n" + spec.extensions)
        csr = work / "req.csr"
        run([OPENSSL, "req", "-new", "-config", str(work / "req.cnf"), "-key", str(self.key_path(spec.key)),
             "-subj", spec.subject, "-out", str(csr)])
        out = work / "cert.pem"
        start, end = spec.dates
        cmd = [OPENSSL, "ca", "-batch", "-config", str(work / "ca.cnf"), "-notext", "-in", str(csr),
               "-out", str(out), "-startdate", asn1_time(start), "-enddate", asn1_time(end),
               "-md", spec.digest, "-extfile", str(work / "ext.cnf"), "-extensions", "ext"]
        if spec.issuer is None:
            cmd += ["-selfsign", "-keyfile", str(self.key_path(spec.key))]
        else:
            issuer_key = self.spec(spec.issuer).key
            cmd += ["-cert", str(tmp / f"{spec.issuer}.pem"), "-keyfile", str(self.key_path(issuer_key))]
        run(cmd)
        shutil.copy(out, tmp / f"{spec.name}.pem")
        run([OPENSSL, "x509", "-in", str(out), "-outform", "DER", "-out", str(self.directory / f"{spec.name}.der")])

    def reissue_until(self, tmp: Path, name: str, accept: Callable[[bytes], bool]) -> None:
        """Re-issue certificate `name` until `accept(der)` holds (20 tries)."""
        for _ in range(20):
            if accept((self.directory / f"{name}.der").read_bytes()):
                return
            shutil.rmtree(tmp / f"ca-{name}")
            self.issue(tmp, self.spec(name))
        raise SystemExit(f"could not issue a {name} certificate the vectors can use")


# --------------------------------------------------------------------------------------------------
# the verifier's output record (manifest `expected`)
# --------------------------------------------------------------------------------------------------

# The members of a normalized transaction, in the verifier's order.
TRANSACTION_FIELDS = (
    "environment", "bundle_id", "product_id", "product_type", "transaction_id", "original_transaction_id",
    "web_order_line_item_id", "subscription_group_id", "quantity", "purchase_date", "original_purchase_date",
    "expires_date", "revocation_date", "revocation_reason", "is_upgraded", "ownership_type",
    "transaction_reason", "offer", "price", "storefront", "storefront_id", "app_account_token",
    "app_transaction_id", "signed_date",
)


def transaction_record(source: str, **members: object) -> dict:
    """A full normalized transaction: `source` ("jws" or "receipt"), every other member null unless given."""
    unknown = set(members) - set(TRANSACTION_FIELDS)
    assert not unknown, unknown
    return {"source": source, **{k: members.get(k) for k in TRANSACTION_FIELDS}}


def offer_record(type_: str | None, id_: str | None, discount_type: str | None, period: str | None) -> dict:
    """A transaction's `offer` member."""
    return {"type": type_, "id": id_, "discount_type": discount_type, "period": period}


def chain_record(pki: TestPKI, leaf: str = "leaf", root: str = "root") -> dict:
    """The `chain` member: the anchor's and the leaf's fingerprints and the leaf's notAfter."""
    return {"root_sha256": sha256_hex(pki.der[root]), "leaf_sha256": sha256_hex(pki.der[leaf]),
            "leaf_not_after": pki.not_after(leaf)}


def verified_record(kind: str, environment: str | None, validated_at: str | None, chain: dict,
                    transactions: list, **extra: object) -> dict:
    """A verified record; `extra` adds the kind's own members (renewal_info, notification, app, ...)."""
    e = {"status": "verified", "kind": kind, "environment": environment, "validated_at": validated_at,
         "chain": chain, "transactions": transactions}
    e.update(extra)
    return e


def rejected(code: str) -> dict:
    """A rejection with error code `code`."""
    return {"status": "rejected", "error": {"code": code}}


# --------------------------------------------------------------------------------------------------
# manifests
# --------------------------------------------------------------------------------------------------


class Manifest:
    """The entries of a manifest.json: {"vectors":[{"name","file","args","expected","description"}]}."""

    def __init__(self) -> None:
        self.entries: list[dict] = []

    def entry(self, name: str, file: str, args: list[str], expected: dict, description: str) -> None:
        """Add one entry; `file` is relative to TestVectors/, `args` to the repository root."""
        assert all(e["name"] != name for e in self.entries), f"duplicate vector name {name}"
        self.entries.append({"name": name, "file": file, "args": args, "expected": expected,
                             "description": description})

    def write(self, path: Path) -> None:
        """Write the manifest, indented by two spaces, with a trailing newline."""
        path.write_text(json.dumps({"vectors": self.entries}, indent=2) + "\n")

    def missing_files(self) -> list[str]:
        """Problems: files or TestVectors/ arguments an entry names that do not exist."""
        problems = []
        for e in self.entries:
            if not (TV / e["file"]).exists():
                problems.append(f"{e['name']}: missing {e['file']}")
            for a in e["args"]:
                if a.startswith("TestVectors/") and not (REPO / a).exists():
                    problems.append(f"{e['name']}: missing {a}")
        return problems

    def summary(self) -> str:
        """'<n> manifest entries: verified <k>, <code> <k>, ...'."""
        counts: dict[str, int] = {}
        for e in self.entries:
            key = e["expected"].get("error", {}).get("code") or "verified"
            counts[key] = counts.get(key, 0) + 1
        return f"{len(self.entries)} manifest entries: " + ", ".join(f"{k} {n}" for k, n in counts.items())


def finish_self_check(problems: list[str], passed: str) -> None:
    """Print the problems and exit non-zero, or print that the self-check passed."""
    if problems:
        print("SELF-CHECK FAILED:")
        for p in problems:
            print("  - " + p)
        raise SystemExit(1)
    print(f"  self-check passed ({passed})")


# --------------------------------------------------------------------------------------------------
# the generators' main
# --------------------------------------------------------------------------------------------------

M = TypeVar("M", bound=Manifest)


def generate(doc: str, pki: TestPKI, out: Path, stale: Callable[[Path], bool], build: Callable[[Path], M],
             self_check: Callable[[Path, M], None], retry: dict[str, Callable[[bytes], bool]] | None = None) -> None:
    """A generator's main: parse --new-pki, build the PKI, rewrite `out`, write its manifest, self-check.

    `stale` says which files of `out` to delete first; `build(tmp)` writes the vectors and returns
    the manifest; `retry` goes to `TestPKI.build`. Exits non-zero when openssl or the self-check fails.
    """
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--new-pki", action="store_true",
                        help=f"generate new keys instead of reusing {pki.directory.relative_to(REPO)}/*.key")
    args = parser.parse_args()
    print(f"using {openssl_version()}")
    with tempfile.TemporaryDirectory(prefix=f"receiptkit-{out.name}-") as tmp_name:
        tmp = Path(tmp_name)
        print(f"building the {pki.title} in {pki.directory.relative_to(REPO)}")
        pki.build(tmp, args.new_pki, retry)
        out.mkdir(parents=True, exist_ok=True)
        for f in out.iterdir():
            if f.is_file() and stale(f):
                f.unlink()
        print(f"writing vectors to {out.relative_to(REPO)}")
        manifest = build(tmp)
        manifest.write(out / "manifest.json")
        print("self-check")
        self_check(tmp, manifest)
    print(manifest.summary())
    print(f"root sha256: {sha256_hex(pki.der['root'])}")
