#!/usr/bin/env python3
"""Crash test of receiptkit-server: an acknowledged notification is never lost.

A client posts COUNT distinct genuine notifications (4 connections) to a server on loopback
(SQLite in a temporary directory, or the empty PostgreSQL database --database names); once a
third of them got 200, the server is killed with
SIGKILL — only the process this script started — and started again, and the client goes on
(answers lost to the crash are retried). Then:
  1. every notification that got 200 is in the store (inputs.dedup_key);
  2. re-posting all of them gets 200 for each and leaves exactly one event per notification.
Finally the server is stopped with SIGTERM and must exit 0 (graceful shutdown).

Bounded: every request has a 10 s timeout, the whole run a deadline (--deadline, 600 s), and the
server is killed in any case on the way out.

    crash_test.py BINARY --bodies FILE [--count 3000] [--deadline 600] [--database postgres://USER@HOST:PORT/DB]

FILE holds distinct genuine webhook bodies, one per line, as `receiptkit-benchmark
--write-notification-bodies` writes them (crash-test.sh does).

PostgreSQL is read back with `psql` (Debian: postgresql-client).
"""
import argparse
import base64
import concurrent.futures
import http.client
import json
import os
import pathlib
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def read_bodies(path: str, count: int) -> list[tuple[str, str]]:
    """The first COUNT webhook bodies of a file, each with its notificationUUID (read from the
    signedPayload's payload: the bodies are genuine, and the server verifies them)."""
    notifications = []
    with open(path) as file:
        for line in file:
            body = line.strip()
            if not body:
                continue
            payload = json.loads(body)["signedPayload"].split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
            notifications.append((body, claims["notificationUUID"]))
            if len(notifications) == count:
                return notifications
    raise SystemExit(f"crash-test: {path} holds {len(notifications)} bodies, fewer than --count {count}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, binary: str, database: str, port: int, log: pathlib.Path):
        self.binary, self.database, self.port, self.log = binary, database, port, log
        self.process = None

    def start(self, deadline: float):
        env = dict(os.environ)
        env.update({
            "RECEIPTKIT_BUNDLE_ID": "com.receiptkit.example", "RECEIPTKIT_APP_APPLE_ID": "1234567890",
            "RECEIPTKIT_ENVIRONMENT": "Sandbox", "RECEIPTKIT_ROOT_FILE": str(ROOT / "TestVectors/pki/root.der"),
            "RECEIPTKIT_DATABASE_URL": self.database, "HOST": "127.0.0.1", "PORT": str(self.port),
        })
        env.pop("RECEIPTKIT_API_TOKEN", None)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen([self.binary], env=env, stdout=log, stderr=log)
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"crash-test: the server exited with {self.process.returncode}; see {self.log}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                connection.request("GET", "/readyz")
                if connection.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise SystemExit("crash-test: the server did not become ready in time")

    def kill(self):
        """SIGKILL to the process this script started, and only to it."""
        if self.process and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)


class Store:
    """What the server stored, read with another connection: SQLite's file or `psql`."""

    def __init__(self, database: str):
        self.database = database

    def query(self, sql: str) -> list[tuple[str, ...]]:
        if self.database.startswith("sqlite:"):
            with sqlite3.connect(self.database.removeprefix("sqlite:")) as db:
                return [tuple(str(value) for value in row) for row in db.execute(sql)]
        result = subprocess.run(
            ["psql", self.database, "--no-psqlrc", "--tuples-only", "--no-align", "--field-separator=|",
             "--set=ON_ERROR_STOP=1", "--command", sql],
            capture_output=True, text=True, timeout=60, check=False)
        if result.returncode != 0:
            raise SystemExit(f"crash-test: psql failed: {result.stderr.strip()}")
        return [tuple(line.split("|")) for line in result.stdout.splitlines() if line]

    def is_empty(self) -> bool:
        if self.database.startswith("sqlite:"):
            return not os.path.exists(self.database.removeprefix("sqlite:"))
        tables = self.query("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema()")
        return tables == [("0",)]


def post(port: int, body: str) -> int | None:
    """The status, or None when no answer came (the server was down or died mid-request)."""
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("POST", "/appstore/notifications", body=body, headers={"Content-Type": "application/json"})
        status = connection.getresponse().status
        connection.close()
        return status
    except (OSError, http.client.HTTPException):
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--bodies", required=True, help="webhook bodies, one per line (receiptkit-benchmark --write-notification-bodies)")
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--deadline", type=float, default=600)
    parser.add_argument("--database", help="a postgres:// URL of an empty database (default: SQLite in a temporary directory)")
    args = parser.parse_args()
    if args.database is not None and not args.database.startswith("postgres://"):
        parser.error("--database must be a postgres:// URL")
    if args.database is not None and shutil.which("psql") is None:
        raise SystemExit("crash-test: --database needs psql (Debian: postgresql-client)")
    deadline = time.monotonic() + args.deadline

    notifications = read_bodies(args.bodies, args.count)
    if len({uuid for _, uuid in notifications}) != len(notifications):
        raise SystemExit("crash-test: the bodies repeat a notificationUUID")
    with tempfile.TemporaryDirectory(prefix="receiptkit-crash-") as directory:
        database = args.database or "sqlite:" + os.path.join(directory, "store.sqlite")
        store = Store(database)
        if not store.is_empty():
            raise SystemExit(f"crash-test: the database is not empty: {database}")
        print(f"crash-test: {'PostgreSQL' if args.database else 'SQLite'}", flush=True)
        server = Server(args.binary, database, free_port(), pathlib.Path(directory) / "server.log")
        try:
            server.start(deadline)
            acknowledged: set[str] = set()
            lock = threading.Lock()
            killed = threading.Event()
            restarted = threading.Event()
            kill_after = args.count // 3

            def send(item):
                body, notification_uuid = item
                while time.monotonic() < deadline:
                    status = post(server.port, body)
                    if status == 200:
                        with lock:
                            acknowledged.add(notification_uuid)
                            if len(acknowledged) >= kill_after and not killed.is_set():
                                killed.set()
                                server.kill()
                                print(f"crash-test: SIGKILL after {len(acknowledged)} acknowledged", flush=True)
                                server.start(deadline)
                                restarted.set()
                        return
                    if status is not None and status != 503:
                        raise SystemExit(f"crash-test: a genuine notification got {status}")
                    time.sleep(0.05)  # no answer or 503: retry, as Apple does
                raise SystemExit("crash-test: deadline passed")

            with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
                list(pool.map(send, notifications))
            if not restarted.is_set():
                raise SystemExit("crash-test: the server was never killed")
            print(f"crash-test: {len(acknowledged)} notifications acknowledged across the crash", flush=True)

            stored = {row[0] for row in store.query("SELECT dedup_key FROM inputs")}
            missing = [uuid for uuid in acknowledged if f"notification:{uuid}" not in stored]
            if missing:
                raise SystemExit(f"crash-test: FAILED: {len(missing)} acknowledged notifications are not stored, e.g. {missing[:3]}")
            print(f"crash-test: every acknowledged notification is stored ({len(stored)} inputs)", flush=True)

            with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
                statuses = list(pool.map(lambda item: post(server.port, item[0]), notifications))
            if any(status != 200 for status in statuses):
                raise SystemExit(f"crash-test: FAILED: re-posting got {sorted(set(map(str, statuses)))}")
            [(total, distinct)] = store.query("SELECT COUNT(*), COUNT(DISTINCT dedup_key) FROM inputs")
            if int(total) != args.count or int(distinct) != args.count:
                raise SystemExit(f"crash-test: FAILED: after re-posting all, {total} inputs ({distinct} distinct) for {args.count} notifications")
            print(f"crash-test: re-posted all {args.count}: exactly one event each", flush=True)

            code = server.terminate()
            if code != 0:
                raise SystemExit(f"crash-test: FAILED: SIGTERM exit status {code}")
            print("crash-test: SIGTERM: graceful exit 0", flush=True)
            print("crash-test: PASSED", flush=True)
        finally:
            server.kill()


if __name__ == "__main__":
    main()
