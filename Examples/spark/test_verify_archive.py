#!/usr/bin/env python3
r"""Tests of Examples/spark/verify_archive.py.

Without Spark: the argument checks, and each partition's framing and record check against the
real verify-receipt. With Spark in local mode (``local[2]``): the job over an archive made from
TestVectors/ (valid and invalid JWS and receipts, with ids, in several files), compared record
for record with one single-process ``verify-receipt`` run over the same files; the same without
ids; and a binary that loses a record, which must fail the job.

    RECEIPTKIT_VERIFY_RECEIPT=$(swift build -c release --show-bin-path)/verify-receipt \
        python3 Examples/spark/test_verify_archive.py

``scripts/spark-test.sh`` installs Java and PySpark when they are missing, then runs this.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import json
import os
import random
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unittest
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parents[1]
JOB = HERE / "verify_archive.py"
BINARY = os.environ.get("RECEIPTKIT_VERIFY_RECEIPT", "")

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import verify_archive as job  # noqa: E402 (the module under test, beside this file)

#: The roots the chosen vectors name in their manifests, relative to TestVectors/.
ROOTS = ("TestVectors/pki/root.der", "TestVectors/receipts/pki/root.der")
#: One option set under which every chosen vector has its manifest's outcome: both test roots.
OPTIONS = [argument for root in ROOTS for argument in ("--root", str(REPOSITORY / root))]
#: The master of every job run.
MASTER = "local[2]"


@dataclass(frozen=True)
class Vector:
    """A test vector as one archive line, with the outcome its manifest expects."""

    name: str
    text: str
    status: str
    error_code: str | None


@functools.cache
def manifest_vectors() -> tuple[Vector, ...]:
    """Every vector whose manifest entry needs only one of the test roots, once per file.

    Binary receipts come as base64, the way an archive holds them.
    """
    vectors: list[Vector] = []
    seen: set[str] = set()
    for folder in ("jws", "receipts"):
        manifest = json.loads((REPOSITORY / "TestVectors" / folder / "manifest.json").read_text())
        for entry in manifest["vectors"]:
            if (
                len(entry["args"]) != 2
                or entry["args"][0] != "--root"
                or entry["args"][1] not in ROOTS
            ):
                continue
            if entry["file"] in seen:
                continue
            seen.add(entry["file"])
            path = REPOSITORY / "TestVectors" / entry["file"]
            text = (
                base64.b64encode(path.read_bytes()).decode()
                if path.suffix == ".der"
                else path.read_text().strip()
            )
            assert "\n" not in text, f"{path} is not one line"
            expected = entry["expected"]
            vectors.append(
                Vector(
                    entry["file"], text, expected["status"], expected.get("error", {}).get("code")
                )
            )
    return tuple(vectors)


def archive_files(vectors: Sequence[Vector], with_ids: bool) -> dict[str, tuple[list[str], str]]:
    """The archive: file name to (lines, line ending).

    Every vector twice (two ids), shuffled over four files, one of them with CRLF endings; an
    empty file; a file of blank lines; blank lines, a line too long to be an input, and with ids
    an id starting with 0 on a file's first line, a line without a tab, an empty input and an id
    that JSON must escape.
    """
    lines = [
        f"{copy}:{vector.name}\t{vector.text}" if with_ids else vector.text
        for copy in (1, 2)
        for vector in vectors
    ]
    random.Random(7).shuffle(lines)
    quarter = len(lines) // 10
    chunks = [
        lines[: 4 * quarter],
        lines[4 * quarter : 7 * quarter],
        lines[7 * quarter : 9 * quarter],
        lines[9 * quarter :],
    ]
    too_long = ("too-long\t" if with_ids else "") + "A" * 1_500_000
    odd = (
        ["no tab on this line", "empty-input\t", f'quote " backslash \\ ü\t{vectors[0].text}']
        if with_ids
        else []
    )
    first = [f"0042\t{vectors[0].text}"] if with_ids else []
    return {
        "part-0.txt": ([*first, *chunks[0], too_long], "\n"),
        "part-1.txt": ([*chunks[1][:5], "", "   ", "\t \t", *chunks[1][5:], *odd], "\n"),
        "part-2.txt": ([*chunks[2], ""], "\r\n"),
        "part-3.txt": (chunks[3], "\n"),
        "part-4.txt": ([], ""),
        "part-5.txt": (["", " ", "\t"], "\n"),
    }


def write_archive(folder: Path, files: dict[str, tuple[list[str], str]]) -> list[Path]:
    """Writes the archive's files and returns their paths, in name order."""
    folder.mkdir(parents=True)
    for name, (lines, ending) in files.items():
        (folder / name).write_bytes("".join(line + ending for line in lines).encode())
    return sorted(folder.iterdir())


def single_process(files: Iterable[Path], with_ids: bool) -> list[str]:
    """One ``verify-receipt`` run over the files, in order: its output lines."""
    arguments = [BINARY, *(["--with-ids"] if with_ids else []), *OPTIONS, *map(str, files)]
    result = subprocess.run(arguments, capture_output=True, check=False)
    assert result.returncode in (0, 1), result.stderr.decode()
    return result.stdout.decode().splitlines()


def without_input(record: str) -> str:
    """A record's line without its leading ``"input":N,`` member (numbers are per partition)."""
    assert record.startswith('{"input":'), record[:80]
    return "{" + record[record.index(",") + 1 :]


def expected_summary(records: Iterable[dict]) -> dict[str, object]:
    """The summary the job must write, counted from records as ``verify-receipt --summary`` does."""
    status, codes, kinds, environments = Counter(), Counter(), Counter(), Counter()
    for record in records:
        status[record["status"]] += 1
        if record["status"] == "rejected":
            codes[record["error"]["code"]] += 1
        else:
            kinds[record["kind"]] += 1
            environments[record.get("environment") or "(none)"] += 1
    return {
        "total": sum(status.values()),
        "status": dict(status),
        "error_code": dict(codes),
        "kind": dict(kinds),
        "environment": dict(environments),
    }


def job_arguments(input_glob: str, output: Path, *, with_ids: bool, binary: str = BINARY) -> list[str]:
    """The job's command line over `input_glob` into `output`, in local mode with the test options."""
    return [
        "--binary",
        binary,
        "--input",
        input_glob,
        "--output",
        str(output),
        "--master",
        MASTER,
        *(["--with-ids"] if with_ids else []),
        "--",
        *OPTIONS,
    ]


def run_job(arguments: Sequence[str], *, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Runs verify_archive.py as a user would, from the repository root; prints its wall time."""
    environment = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, str(JOB), *arguments],
        cwd=REPOSITORY,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = arguments[arguments.index("--output") + 1] if "--output" in arguments else "-"
    print(
        f"\n  verify_archive.py --output {Path(output).name}: exit {result.returncode} "
        f"in {time.monotonic() - start:.1f} s",
        file=sys.stderr,
    )
    return result


def pipe_partition(
    lines: Sequence[str],
    with_ids: bool,
    options: Sequence[str] = OPTIONS,
    edit: Callable[[list[str]], list[str]] = lambda output: output,
) -> list[str]:
    """One partition through the job's framing, the real binary and the job's check, no Spark.

    ``edit`` changes verify-receipt's output lines before the check.
    """
    marker = "test-marker:"
    sent = list(job.feed(lines, with_ids, job.line_limit(options), marker))
    result = subprocess.run(
        [BINARY, *job.verify_arguments(options, 1)],
        input="".join(f"{line}\n" for line in sent),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    return list(job.check_records(0, edit(result.stdout.splitlines()), with_ids, marker))


def has_spark() -> bool:
    """Whether PySpark is importable and a Java runtime is on the PATH."""
    return importlib.util.find_spec("pyspark") is not None and shutil.which("java") is not None


class ArgumentTests(unittest.TestCase):
    """Bad arguments are refused before Spark starts, with a message and verify-receipt's codes."""

    def test_required_arguments(self) -> None:
        result = run_job(["--binary", BINARY])
        self.assertEqual(result.returncode, job.EXIT_USAGE)
        self.assertIn("--input", result.stderr)

    def test_missing_binary(self) -> None:
        result = run_job(
            ["--binary", "/nonexistent/verify-receipt", "--input", "x", "--output", "y"]
        )
        self.assertEqual(result.returncode, job.EXIT_NO_INPUT)
        self.assertIn("no such file", result.stderr)

    def test_refused_verify_receipt_options(self) -> None:
        for options in (
            ["--with-ids"],
            ["--pretty"],
            ["--format", "csv"],
            ["--format=verifyreceipt"],
        ):
            with self.subTest(options=options), self.assertRaises(job.UsageError):
                job.parse_arguments(
                    ["--binary", "b", "--input", "i", "--output", "o", "--", *options]
                )
        parsed = job.parse_arguments(
            [
                "--binary",
                "b",
                "--input",
                "i",
                "--output",
                "o/",
                "--with-ids",
                "--",
                "--format",
                "json",
                "--root",
                "r.der",
            ]
        )
        self.assertEqual(parsed.verify_options, ("--format", "json", "--root", "r.der"))
        self.assertEqual(parsed.output, "o")
        self.assertTrue(parsed.with_ids)

    def test_options_verify_receipt_refuses(self) -> None:
        arguments = job.verify_arguments(["--bogus"], 1)
        with self.assertRaises(job.UsageError) as refused:
            job.check_run(BINARY, arguments, "m:")
        self.assertEqual(refused.exception.status, job.EXIT_USAGE)
        with self.assertRaises(job.UsageError) as unreadable:
            job.check_run(BINARY, job.verify_arguments(["--root", "/nonexistent.der"], 1), "m:")
        self.assertEqual(unreadable.exception.status, job.EXIT_NO_INPUT)
        with self.assertRaises(job.UsageError) as file_argument:
            batch = str(REPOSITORY / "TestVectors/jws/batch.txt")
            job.check_run(BINARY, job.verify_arguments([*OPTIONS, batch], 1), "m:")
        self.assertIn("file arguments", str(file_argument.exception))
        self.assertIsNone(job.check_run(BINARY, job.verify_arguments(OPTIONS, 1), "m:"))

    def test_jobs_follow_task_cpus_unless_given(self) -> None:
        self.assertEqual(
            job.verify_arguments(["--root", "r"], 2), ["--with-ids", "--jobs", "2", "--root", "r"]
        )
        self.assertEqual(job.verify_arguments(["--jobs=4"], 2), ["--with-ids", "--jobs=4"])


class PartitionTests(unittest.TestCase):
    """Each partition's framing and check, with the real binary and no Spark."""

    lines: ClassVar = (
        "",
        manifest_vectors()[0].text,
        "  ",
        "not an input",
        "\t",
        manifest_vectors()[1].text,
        "\r",
    )

    def test_line_limit(self) -> None:
        self.assertEqual(job.line_limit([]), 1_402_200)
        self.assertEqual(job.line_limit(["--max-jws-size=2000000"]), 2_004_096)
        self.assertEqual(job.line_limit(["--max-receipt-size", "30"]), 65_536 + 4096)

    def test_without_ids_records_are_verify_receipts_own(self) -> None:
        records = pipe_partition(self.lines, with_ids=False)
        plain = subprocess.run(
            [BINARY, *OPTIONS],
            input="".join(f"{line}\n" for line in self.lines),
            capture_output=True,
            text=True,
            check=False,
        )
        self.assertEqual(records, plain.stdout.splitlines())
        self.assertEqual(len(records), 3)

    def test_with_ids_records_keep_ids(self) -> None:
        lines = [
            f"id-{number}\t{line}" if line.strip() else line
            for number, line in enumerate(self.lines)
        ]
        records = pipe_partition([*lines, "no tab"], with_ids=True)
        self.assertEqual(
            [json.loads(record)["id"] for record in records], ["id-1", "id-3", "id-5", None]
        )

    def test_blank_line_over_the_limit_is_an_input(self) -> None:
        options = [*OPTIONS, "--max-jws-size", "10", "--max-receipt-size", "10"]
        limit = job.line_limit(options)
        self.assertFalse(job.is_skipped(" " * (limit + 1), limit))
        self.assertTrue(job.is_skipped(" " * limit, limit))
        for with_ids in (False, True):
            records = pipe_partition([" " * (limit + 1), " " * limit], with_ids, options)
            self.assertEqual(
                [json.loads(record)["error"]["code"] for record in records], ["input_too_large"]
            )

    def test_lost_duplicated_and_unfinished_output_fails(self) -> None:
        edits = {
            "lost": lambda output: output[:1] + output[2:],
            "duplicated": lambda output: output[:2] + output[1:],
            "unfinished": lambda output: output[:-1],
            "after the marker": lambda output: output + output[:1],
        }
        for name, edit in edits.items():
            with self.subTest(name), self.assertRaises(job.PartitionCheckError):
                pipe_partition(self.lines, with_ids=False, edit=edit)


def spark_required() -> bool:
    """Whether the Spark tests must run: SPARK_TEST_REQUIRED=1 (scripts/spark-test.sh in CI) or CI=true."""
    return os.environ.get("SPARK_TEST_REQUIRED") == "1" or os.environ.get("CI", "").lower() in ("true", "1")


@unittest.skipUnless(
    has_spark() or spark_required(), "PySpark or Java is missing (scripts/spark-test.sh installs them)"
)
class SparkJobTests(unittest.TestCase):
    """The job in Spark local mode against a single-process run over the same archive.

    Skipped when PySpark or Java is missing, unless they are required: then every test fails,
    saying so.
    """

    folder: Path
    runs: dict[str, subprocess.CompletedProcess[str]]
    expected: dict[str, list[str]]
    rows: dict[str, list]

    @classmethod
    def setUpClass(cls) -> None:
        if not has_spark():
            raise AssertionError(
                "PySpark or Java is missing, and the Spark job must be tested here "
                "(SPARK_TEST_REQUIRED=1 or CI=true); scripts/spark-test.sh installs them"
            )
        cls.folder = Path(tempfile.mkdtemp(prefix="verify-archive-test-"))
        vectors = manifest_vectors()
        cls.runs, cls.expected = {}, {}
        for name, with_ids in (("ids", True), ("plain", False)):
            files = write_archive(cls.folder / f"archive-{name}", archive_files(vectors, with_ids))
            cls.expected[name] = single_process(files, with_ids)
            cls.runs[name] = run_job(
                job_arguments(
                    str(cls.folder / f"archive-{name}/part-*.txt"), cls.folder / f"out-{name}", with_ids=with_ids
                )
            )
        cls.rows = cls.read_records()

    @classmethod
    def read_records(cls) -> dict[str, list]:
        """The Parquet rows each successful run wrote, read with a Spark session of this test."""
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.master("local[1]").appName("verify-archive-test").getOrCreate()
        try:
            return {
                name: spark.read.parquet(str(cls.folder / f"out-{name}/records")).collect()
                for name, run in cls.runs.items()
                if run.returncode == 0
            }
        finally:
            spark.stop()

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.folder, ignore_errors=True)

    def completed(self, name: str) -> list:
        """The rows of a run, failing the test with the job's standard error if it failed."""
        run = self.runs[name]
        self.assertEqual(run.returncode, 0, f"the job failed:\n{run.stderr[-6000:]}")
        return self.rows[name]

    def test_manifest_outcomes_under_one_option_set(self) -> None:
        vectors = {f"1:{vector.name}": vector for vector in manifest_vectors()}
        self.assertGreater(len(vectors), 100)
        checked = set()
        for line in self.expected["ids"]:
            record = json.loads(line)
            if (vector := vectors.get(record["id"])) is None:
                continue  # the second copy of a vector, or one of the archive's odd lines
            checked.add(record["id"])
            with self.subTest(vector.name):
                self.assertEqual(
                    (record["status"], record.get("error", {}).get("code")),
                    (vector.status, vector.error_code),
                )
        # Every manifest vector's outcome was compared, not just some.
        self.assertEqual(checked, set(vectors))

    def test_every_id_once_with_single_process_records(self) -> None:
        rows = self.completed("ids")
        ids = Counter(json.loads(line)["id"] for line in self.expected["ids"])
        self.assertEqual(max(ids.values()), 1, "the archive's ids are not unique")
        self.assertEqual(Counter(row["id"] for row in rows), ids)
        expected = {json.loads(line)["id"]: line for line in self.expected["ids"]}
        for row in rows:
            line = expected[row["id"]]
            record = json.loads(line)
            with self.subTest(id=row["id"]):
                self.assertEqual(without_input(row["record"]), without_input(line))
                self.assertEqual(row["status"], record["status"])
                self.assertEqual(row["kind"], record.get("kind"))
                self.assertEqual(row["error_code"], record.get("error", {}).get("code"))
                self.assertEqual(row["environment"], record.get("environment"))

    def test_archive_covers_what_it_should(self) -> None:
        rows = self.completed("ids")
        codes = Counter(row["error_code"] for row in rows)
        self.assertEqual(Counter(row["status"] for row in rows).keys(), {"verified", "rejected"})
        self.assertGreaterEqual(codes["input_too_large"], 3)
        self.assertGreaterEqual(codes["unrecognized_input"], 2)
        self.assertIn("0042", {row["id"] for row in rows})
        self.assertIn('quote " backslash \\ ü', {row["id"] for row in rows})
        partitions = sum(1 for row in rows if row["record"].startswith('{"input":1,'))
        self.assertGreaterEqual(
            partitions, 4, "records from several partitions (each numbered from 1)"
        )

    def test_without_ids_records_match(self) -> None:
        rows = self.completed("plain")
        self.assertEqual(
            Counter(without_input(row["record"]) for row in rows),
            Counter(without_input(line) for line in self.expected["plain"]),
        )
        self.assertEqual({row["id"] for row in rows}, {None})

    def test_summary(self) -> None:
        for name in self.runs:
            with self.subTest(name):
                self.completed(name)
                summary = json.loads((self.folder / f"out-{name}/summary.json").read_text())
                self.assertEqual(summary, expected_summary(map(json.loads, self.expected[name])))
                self.assertEqual(json.loads(self.runs[name].stdout), summary)

    def test_records_partitioned_by_status(self) -> None:
        self.completed("ids")
        folders = {
            path.name for path in (self.folder / "out-ids/records").iterdir() if path.is_dir()
        }
        self.assertEqual(folders, {"status=verified", "status=rejected"})

    def test_existing_output_and_missing_input_are_refused(self) -> None:
        self.completed("ids")
        archive = str(self.folder / "archive-ids/part-*.txt")
        exists = run_job(job_arguments(archive, self.folder / "out-ids", with_ids=True))
        self.assertEqual(exists.returncode, job.EXIT_CANNOT_CREATE, exists.stderr[-3000:])
        self.assertIn("already exists", exists.stderr)
        missing = run_job(job_arguments(str(self.folder / "nothing-*.txt"), self.folder / "out-missing", with_ids=False))
        self.assertEqual(missing.returncode, job.EXIT_NO_INPUT, missing.stderr[-3000:])
        self.assertIn("matches no file", missing.stderr)

    def test_a_lost_record_fails_the_job(self) -> None:
        lossy = self.folder / "lossy" / "verify-receipt"
        lossy.parent.mkdir()
        lossy.write_text(f'#!/bin/sh\n"{BINARY}" "$@" | sed 3d\n')
        lossy.chmod(lossy.stat().st_mode | stat.S_IXUSR)
        output = self.folder / "out-lossy"
        result = run_job(
            job_arguments(str(self.folder / "archive-ids/part-*.txt"), output, with_ids=True, binary=str(lossy))
        )
        self.assertEqual(result.returncode, job.EXIT_FAILED, result.stderr[-3000:])
        self.assertIn("PartitionCheckError: partition", result.stderr)
        self.assertFalse((output / "summary.json").exists())


def main() -> None:
    """Runs the tests; the binary must be named by RECEIPTKIT_VERIFY_RECEIPT."""
    if not BINARY or not os.access(BINARY, os.X_OK):
        sys.exit(
            "set RECEIPTKIT_VERIFY_RECEIPT to verify-receipt's path "
            "($(swift build -c release --show-bin-path)/verify-receipt)"
        )
    unittest.main(verbosity=2)


if __name__ == "__main__":
    main()
