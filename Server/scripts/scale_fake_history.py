#!/usr/bin/env python3
"""Get Notification History for Server/scripts/scale.sh's reconcile window: a loopback HTTP server
that answers `POST /inApps/v1/notifications/history` as Apple documents it, from a file of webhook
bodies ({"signedPayload": …} a line, signed under the test PKI by scale_notifications.py), and
checks each request's token as Apple does: `Bearer` JWT, header `alg` ES256, `kid`, `typ` JWT;
claims `iss`, `aud` appstoreconnect-v1, `bid` one of the apps, `iat` not in the future, `exp` not
passed and at most an hour after `iat`; the signature under the In-App Purchase key's public half.

The notifications are the first app's in Production: its history answers those whose signedDate
lies in the window asked (startDate inclusive, endDate exclusive), 20 a page, oldest first, with
a pagination token; every other app and environment (a path under /sandbox is Sandbox) has an
empty history. A request that fails a check is answered 401 and counted; SIGTERM ends the server,
which then prints `requests=N refused=N notifications=N` and exits 1 if any was refused.

Usage: scale_fake_history.py BODIES KEY_PEM KEY_ID ISSUER_ID BUNDLE_ID[,BUNDLE_ID…] PORT_FILE
(the chosen port is written to PORT_FILE once the server listens). Needs python3-cryptography.
"""
import base64
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

PAGE = 20
HISTORY_PATH = "/inApps/v1/notifications/history"


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def signed_date(signed_payload: str) -> int:
    return json.loads(b64url_decode(signed_payload.split(".")[1]))["signedDate"]


def main() -> None:
    bodies, key_pem, key_id, issuer_id, bundle_ids, port_file = sys.argv[1:7]
    apps = bundle_ids.split(",")
    with open(key_pem, "rb") as handle:
        public_key = serialization.load_pem_private_key(handle.read(), password=None).public_key()
    with open(bodies) as handle:
        payloads = [json.loads(line)["signedPayload"] for line in handle if line.strip()]
    history = sorted((signed_date(payload), payload) for payload in payloads)
    counts = {"requests": 0, "refused": 0, "notifications": 0}
    lock = threading.Lock()

    def checked_claims(authorization: str | None) -> tuple[dict | None, str | None]:
        """The token's claims when it passes every check Apple makes; else None and what is wrong."""
        if not authorization or not authorization.startswith("Bearer "):
            return None, "no Bearer token"
        parts = authorization[len("Bearer "):].split(".")
        if len(parts) != 3:
            return None, "not a JWT"
        try:
            header, claims = json.loads(b64url_decode(parts[0])), json.loads(b64url_decode(parts[1]))
            signature = b64url_decode(parts[2])
        except ValueError:
            return None, "the JWT does not decode"
        if header.get("alg") != "ES256" or header.get("typ") != "JWT":
            return None, "alg is not ES256 or typ is not JWT"
        if header.get("kid") != key_id:
            return None, f"kid is not {key_id}"
        if claims.get("iss") != issuer_id:
            return None, f"iss is not {issuer_id}"
        if claims.get("aud") != "appstoreconnect-v1":
            return None, "aud is not appstoreconnect-v1"
        if claims.get("bid") not in apps:
            return None, f"bid is not one of {apps}"
        iat, exp, now = claims.get("iat"), claims.get("exp"), int(time.time())
        if not isinstance(iat, int) or not isinstance(exp, int):
            return None, "iat or exp is missing"
        if iat > now + 60:
            return None, "iat is in the future"
        if exp <= now:
            return None, "the token expired"
        if exp - iat > 3600:
            return None, "exp is more than an hour after iat"
        if len(signature) != 64:
            return None, "the signature is not 64 bytes"
        der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
        try:
            public_key.verify(der, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return None, "the signature does not verify under the key"
        return claims, None

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            with lock:
                counts["requests"] += 1
            claims, problem = checked_claims(self.headers.get("Authorization"))
            if problem:
                with lock:
                    counts["refused"] += 1
                print(f"scale_fake_history.py: refused: {problem}", file=sys.stderr)
                self.answer(401, {"errorCode": 4010000, "errorMessage": problem})
                return
            path, _, query = self.path.partition("?")
            sandbox = path.startswith("/sandbox/")
            if path.removeprefix("/sandbox") != HISTORY_PATH:
                self.answer(404, {"errorCode": 4040000, "errorMessage": "no such path"})
                return
            try:
                body = json.loads(raw)
                start, end = int(body["startDate"]), int(body["endDate"])
            except (ValueError, KeyError, TypeError):
                self.answer(400, {"errorCode": 4000000, "errorMessage": "startDate and endDate are required"})
                return
            offset = int(query.removeprefix("paginationToken=")) if query.startswith("paginationToken=") else 0
            mine = [] if sandbox or claims["bid"] != apps[0] else [p for d, p in history if start <= d < end]
            page = mine[offset:offset + PAGE]
            with lock:
                counts["notifications"] += len(page)
            has_more = offset + PAGE < len(mine)
            answer = {"notificationHistory": [{"signedPayload": p, "sendAttempts": []} for p in page], "hasMore": has_more}
            if has_more:
                answer["paginationToken"] = str(offset + PAGE)
            self.answer(200, answer)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def stop(*_) -> None:
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    with open(port_file, "w") as handle:
        handle.write(str(server.server_address[1]))
    server.serve_forever()
    print(" ".join(f"{name}={value}" for name, value in counts.items()))
    sys.exit(1 if counts["refused"] else 0)


if __name__ == "__main__":
    main()
