#!/usr/bin/env python3
"""Re-verify an archive of App Store JWS and receipts on Apache Spark, with verify-receipt.

    python3 Examples/spark/verify_archive.py --binary PATH --input GLOB --output DIR
        [--with-ids] [--master URL] [-- VERIFY-RECEIPT OPTIONS...]

Runs with plain ``python3`` when PySpark is installed, or under ``spark-submit``. The archive is
text files with one input per line (``ID<TAB>INPUT`` with ``--with-ids``). The binary is shipped
to the executors with ``SparkContext.addFile``, every partition goes through ``verify-receipt``
with ``RDD.pipe``, and the records are written to ``DIR/records/`` (Parquet, partitioned by
``status``) with a summary in ``DIR/summary.json``, also printed on standard output.

No record is lost or duplicated silently. Each partition's input ends with a marker line whose id
carries the number of inputs sent (lines verify-receipt counts: not blank, or too long to be
read); the records that come back must be numbered 1, 2, ... up to that count, followed by the
marker's own record, or the task fails. verify-receipt always runs with ``--with-ids``: without the
job's ``--with-ids`` each input is sent as ``<TAB>INPUT`` (a line too long to read, as it is) and
the id is taken out of its record again, so records read as ``verify-receipt`` prints them. An
archive is read line by line: a line starting with 0x30 is not taken for a binary receipt.

Exit status: 0 the job completed (whether or not inputs were rejected; see the summary), 1 the
Spark job failed, 64 bad arguments (or options verify-receipt refuses), 66 the binary or an input
cannot be found or read, 69 PySpark is not installed, 73 the output already exists.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext
    from pyspark.sql import Column, DataFrame, SparkSession

EXIT_FAILED = 1
EXIT_USAGE = 64
EXIT_NO_INPUT = 66
EXIT_UNAVAILABLE = 69
EXIT_CANNOT_CREATE = 73

#: The bytes verify-receipt treats as blank: a line of nothing else is skipped (LineReader, Batch).
BLANK = " \t\r\n"

#: verify-receipt's defaults for the options its line limit depends on.
DEFAULT_MAX_JWS_SIZE = 64 * 1024
DEFAULT_MAX_RECEIPT_SIZE = 1024 * 1024

#: verify-receipt options the job sets itself or that break one-record-per-line output.
REFUSED_OPTIONS = {
    "--with-ids": "give --with-ids to verify_archive.py, before '--'",
    "--pretty": "records must be one per line",
    "--format": "the job reads verify-receipt's JSON records; --format must be json",
}

#: The input of the marker line that ends each partition (anything verify-receipt counts).
MARKER_INPUT = "-"

#: Runs on the executor: finds the shipped binary and runs it, turning exit status 1 (some input
#: rejected) into 0 so that RDD.pipe(checkCode=True) fails the task only on a real failure.
#: Arguments: the path SparkFiles gave on the driver (valid in local mode, where the driver is the
#: executor), the binary's file name (cluster executors fetch shipped files into their working
#: directory, SparkFiles' root there), then verify-receipt's arguments.
LAUNCHER = r"""
shipped="$1"; name="$2"; shift 2
if [ -x "$shipped" ]; then
    binary="$shipped"
elif [ -x "./$name" ]; then
    binary="./$name"
else
    echo "verify_archive.py: the shipped $name is neither at $shipped nor in $(pwd)" >&2
    exit 127
fi
"$binary" "$@"
status=$?
[ "$status" -le 1 ] && exit 0
echo "verify_archive.py: $name exited with status $status" >&2
exit "$status"
"""


class UsageError(Exception):
    """A problem with the job's arguments or environment, reported with an exit status."""

    def __init__(self, message: str, status: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.status = status


class PartitionCheckError(RuntimeError):
    """verify-receipt's records for a partition do not match the inputs the partition sent."""


@dataclass(frozen=True)
class JobOptions:
    """The job's command line."""

    binary: str
    input: str
    output: str
    with_ids: bool
    master: str | None
    verify_options: tuple[str, ...]


class _Parser(argparse.ArgumentParser):
    """An argument parser that reports errors as UsageError (exit 64, as verify-receipt does)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}\n{self.format_usage().rstrip()}")


def parse_arguments(argv: Sequence[str]) -> JobOptions:
    """Parses the job's arguments; everything after the first ``--`` is for verify-receipt.

    Raises:
        UsageError: an argument is missing or malformed, or a verify-receipt option is refused.
    """
    arguments = list(argv)
    split = arguments.index("--") if "--" in arguments else len(arguments)
    parser = _Parser(
        prog="verify_archive.py",
        description="Re-verify App Store JWS and receipts on Spark with verify-receipt.",
        epilog="Options after '--' go to verify-receipt (e.g. --root FILE, --bundle-id ID).",
    )
    parser.add_argument(
        "--binary", required=True, metavar="PATH", help="the verify-receipt executable to ship"
    )
    parser.add_argument(
        "--input", required=True, metavar="GLOB", help="text files, one input per line"
    )
    parser.add_argument(
        "--output", required=True, metavar="DIR", help="where records/ and summary.json go"
    )
    parser.add_argument("--with-ids", action="store_true", help="each line is ID<TAB>INPUT")
    parser.add_argument(
        "--master",
        metavar="URL",
        help="Spark master, e.g. local[2] (spark-submit sets it otherwise)",
    )
    parsed = parser.parse_args(arguments[:split])
    verify_options = tuple(arguments[split + 1 :])
    check_verify_options(verify_options)
    return JobOptions(
        binary=parsed.binary,
        input=parsed.input,
        output=parsed.output.rstrip("/") or "/",
        with_ids=parsed.with_ids,
        master=parsed.master,
        verify_options=verify_options,
    )


def check_verify_options(options: Sequence[str]) -> None:
    """Refuses verify-receipt options that the job sets itself or that break its output.

    Everything else (unknown options, file arguments) is left to the check run of the binary.

    Raises:
        UsageError: naming the option and why.
    """
    for index, option in enumerate(options):
        name, _, inline = option.partition("=")
        if name not in REFUSED_OPTIONS:
            continue
        if name == "--format":
            value = inline if inline else (options[index + 1] if index + 1 < len(options) else "")
            if value == "json":
                continue
        raise UsageError(
            f"verify-receipt option {option} is not allowed here: {REFUSED_OPTIONS[name]}"
        )


def option_value(options: Sequence[str], name: str) -> str | None:
    """The last value given to a verify-receipt option (``--name VALUE`` or ``--name=VALUE``)."""
    value = None
    for index, option in enumerate(options):
        if option == name and index + 1 < len(options):
            value = options[index + 1]
        elif option.startswith(name + "="):
            value = option[len(name) + 1 :]
    return value


def line_limit(options: Sequence[str]) -> int:
    """The longest line verify-receipt reads as an input, in bytes, under these options.

    A longer line is one ``input_too_large`` record even when it is blank (VerifyReceipt.run).
    A malformed size is left to verify-receipt, which refuses it.
    """

    def size(name: str, default: int) -> int:
        try:
            return int(option_value(options, name) or default)
        except ValueError:
            return default

    jws = size("--max-jws-size", DEFAULT_MAX_JWS_SIZE)
    receipt = size("--max-receipt-size", DEFAULT_MAX_RECEIPT_SIZE)
    return max(jws, (receipt + 2) // 3 * 4) + 4096


def verify_arguments(options: Sequence[str], task_cpus: int) -> list[str]:
    """verify-receipt's arguments in the pipe.

    ``--with-ids``, then one thread per task CPU unless ``--jobs`` is given (Spark already runs
    one task per core), then the user's options.
    """
    jobs = [] if option_value(options, "--jobs") is not None else ["--jobs", str(task_cpus)]
    return ["--with-ids", *jobs, *options]


def is_skipped(line: str, limit: int) -> bool:
    """Whether verify-receipt skips this line: only spaces, tabs, CRs and LFs, within the limit.

    Blank characters are ASCII, so a blank line's length in characters is its length in bytes.
    """
    return len(line) <= limit and not line.strip(BLANK)


def is_too_long(line: str, limit: int) -> bool:
    """Whether the line is longer than verify-receipt's line limit, in UTF-8 bytes."""
    return len(line) * 4 > limit and len(line.encode()) > limit


def marker_line(marker: str, count: int) -> str:
    """The line that ends a partition's input: its id is the marker and the inputs sent."""
    return f"{marker}{count}\t{MARKER_INPUT}"


def feed(lines: Iterable[str], with_ids: bool, limit: int, marker: str) -> Iterator[str]:
    """A partition's lines as verify-receipt (always ``--with-ids``) gets them, then the marker.

    Blank lines pass unchanged: verify-receipt skips them, and is the judge of that (a line this
    function counts and it does not, or the reverse, fails the partition's check). Without the
    job's ``--with-ids`` every other line gets an empty id, except a line too long to read, which
    goes as it is so its ``input_too_large`` record states its own length. Runs in RDD.pipe's
    writer thread, so it must not raise: a problem shows as records that do not match the marker.
    """
    count = 0
    for line in lines:
        if is_skipped(line, limit):
            yield line
            continue
        count += 1
        yield line if with_ids or is_too_long(line, limit) else "\t" + line
    yield marker_line(marker, count)


def check_records(
    partition: int, records: Iterable[str], with_ids: bool, marker: str
) -> Iterator[str]:
    """A partition's records, checked against the marker that ended its input.

    The records must be numbered 1, 2, ... N, then comes the marker's record saying N inputs were
    sent. Without the job's ``--with-ids``, the id the job's framing gave each record is removed,
    so records read as verify-receipt prints them without it.

    Raises:
        PartitionCheckError: a record is missing, repeated or out of order, or the output ended
            before the marker (verify-receipt stopped early).
    """
    expected = 1
    ended = False
    for record in records:
        if ended:
            raise PartitionCheckError(
                f"partition {partition}: output after the end marker: {record[:100]!r}"
            )
        prefix = f'{{"input":{expected},'
        if not record.startswith(prefix):
            raise PartitionCheckError(
                f"partition {partition}: expected record {expected}, got {record[:100]!r}"
            )
        marker_prefix = f'{prefix}"id":"{marker}'
        if record.startswith(marker_prefix):
            sent = int(record[len(marker_prefix) :].split('"', 1)[0])
            if sent != expected - 1:
                raise PartitionCheckError(
                    f"partition {partition}: {sent} inputs sent, {expected - 1} records came back"
                )
            ended = True
            continue
        yield record if with_ids else without_id(record, prefix, partition)
        expected += 1
    if not ended:
        raise PartitionCheckError(
            f"partition {partition}: verify-receipt's output ended after {expected - 1} records, "
            "before the end marker (see the executor's log)"
        )


def without_id(record: str, prefix: str, partition: int) -> str:
    """The record as verify-receipt prints it without ``--with-ids``.

    The ``id`` member, a string or ``null``, is the one right after ``input``.

    Raises:
        PartitionCheckError: the record has no ``id`` member there.
    """
    start = len(prefix) + len('"id":')
    if not record.startswith('"id":', len(prefix)):
        end = -1
    elif record.startswith("null", start):
        end = start + len("null")
    elif record.startswith('"', start):
        _, end = json.decoder.scanstring(record, start + 1)
    else:
        end = -1
    if end < 0 or not record.startswith(",", end):
        raise PartitionCheckError(f"partition {partition}: no id member in {record[:100]!r}")
    return prefix + record[end + 1 :]


def check_binary(path: str) -> None:
    """Checks that the binary to ship is an executable file on this machine.

    Raises:
        UsageError: with exit status 66.
    """
    if not os.path.isfile(path):
        raise UsageError(
            f"--binary {path}: no such file (build it: swift build -c release)", EXIT_NO_INPUT
        )
    if not os.access(path, os.X_OK):
        raise UsageError(f"--binary {path}: not executable", EXIT_NO_INPUT)


def check_run(binary: str, arguments: Sequence[str], marker: str) -> str | None:
    """Runs the binary here on one marker line, as the pipe will, before Spark starts.

    Options it refuses, or files it cannot read, stop the job at once. Returns a warning when the
    binary cannot run on this machine (one built for the cluster), else ``None``.

    Raises:
        UsageError: verify-receipt refused the options (64), cannot read a file they name (66),
            failed, or printed something other than the one record expected.
    """
    try:
        result = subprocess.run(
            [binary, *arguments],
            input=(marker_line(marker, 0) + "\n").encode(),
            capture_output=True,
            timeout=120,
            check=False,
        )
    except OSError as error:
        return f"cannot run {binary} here ({error}); its options are checked on the executors only"
    stderr = result.stderr.decode(errors="replace").strip()
    if result.returncode == EXIT_USAGE:
        raise UsageError(f"verify-receipt refuses the options after '--': {stderr}")
    if result.returncode == EXIT_NO_INPUT:
        raise UsageError(
            f"verify-receipt cannot read a file its options name: {stderr}", EXIT_NO_INPUT
        )
    if result.returncode not in (0, 1):
        raise UsageError(
            f"verify-receipt failed its check run (exit {result.returncode}): {stderr}", EXIT_FAILED
        )
    lines = result.stdout.decode(errors="replace").splitlines()
    if len(lines) != 1 or not lines[0].startswith(f'{{"input":1,"id":"{marker}0"'):
        raise UsageError(
            "verify-receipt did not answer one input line with one record; remove file arguments "
            f"and options such as --help from after '--' (it printed {result.stdout[:200]!r})"
        )
    return None


def pipe_command(shipped: str, name: str, arguments: Sequence[str]) -> str:
    """The command RDD.pipe runs on each executor (it splits it with shlex).

    The launcher script, the two places the binary may be, and verify-receipt's arguments.
    """
    return shlex.join(["sh", "-c", LAUNCHER, "verify_archive", shipped, name, *arguments])


def start_spark(master: str | None) -> SparkSession:
    """Starts (or joins, under spark-submit) the Spark session.

    In local mode the Python workers use this interpreter unless PYSPARK_PYTHON says otherwise.

    Raises:
        UsageError: PySpark is not installed (exit 69).
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as error:
        raise UsageError(
            f"PySpark is not installed ({error}): pip install pyspark, or run under spark-submit",
            EXIT_UNAVAILABLE,
        ) from error
    if master and master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("verify-archive")
    if master:
        builder = builder.master(master)
    return builder.getOrCreate()


def hadoop_path(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """The Hadoop ``(FileSystem, Path)`` of a path.

    Local, HDFS and object-store paths are handled alike, through the JVM: PySpark has no public
    file-system API.
    """
    jvm = spark.sparkContext._jvm
    result = jvm.org.apache.hadoop.fs.Path(path)
    return result.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), result


def check_paths(spark: SparkSession, options: JobOptions) -> None:
    """Checks that the input glob matches something and that the output does not exist yet.

    Raises:
        UsageError: 66 for an input that matches nothing, 73 for an existing output.
    """
    for pattern in options.input.split(","):
        fs, path = hadoop_path(spark, pattern)
        if not fs.globStatus(path):
            raise UsageError(f"--input {pattern}: matches no file", EXIT_NO_INPUT)
    for name in ("records", "summary.json"):
        fs, path = hadoop_path(spark, f"{options.output}/{name}")
        if fs.exists(path):
            raise UsageError(
                f"{options.output}/{name} already exists; the job does not overwrite results",
                EXIT_CANNOT_CREATE,
            )


def verified_records(sc: SparkContext, options: JobOptions, marker: str) -> RDD[str]:
    """One checked record (verify-receipt's output line) per input of the archive.

    Ships the binary, reads the archive and pipes every partition through verify-receipt.
    """
    from pyspark import SparkFiles

    sc.addFile(options.binary)
    name = os.path.basename(options.binary)
    task_cpus = int(sc.getConf().get("spark.task.cpus", "1"))
    arguments = verify_arguments(options.verify_options, task_cpus)
    command = pipe_command(SparkFiles.get(name), name, arguments)
    limit, with_ids = line_limit(options.verify_options), options.with_ids
    lines = sc.textFile(options.input, minPartitions=sc.defaultParallelism)
    print(
        f"verify_archive.py: {lines.getNumPartitions()} partitions, {name} {shlex.join(arguments)}",
        file=sys.stderr,
    )
    sent = lines.mapPartitions(lambda part: feed(part, with_ids, limit, marker))
    piped = sent.pipe(command, env={"PATH": "/usr/local/bin:/usr/bin:/bin"}, checkCode=True)
    return piped.mapPartitionsWithIndex(
        lambda index, part: check_records(index, part, with_ids, marker)
    )


#: The members of a record the DataFrame gets as columns (the rest stays in ``record``).
RECORD_FIELDS = (
    "id STRING, status STRING, kind STRING, environment STRING, error STRUCT<code: STRING>"
)


def records_frame(spark: SparkSession, records: RDD[str]) -> DataFrame:
    """The records as a DataFrame: id, status, kind, error_code, environment and the full line."""
    from pyspark.sql import functions as F

    lines = spark.createDataFrame(
        records.map(lambda record: (record,)), "record STRING", verifySchema=False
    )
    parsed = F.from_json(F.col("record"), RECORD_FIELDS)
    return lines.select(
        parsed["id"].alias("id"),
        parsed["status"].alias("status"),
        parsed["kind"].alias("kind"),
        parsed["error"]["code"].alias("error_code"),
        parsed["environment"].alias("environment"),
        F.col("record"),
    )


def summarize(frame: DataFrame) -> dict[str, object]:
    """Counts by status, error code, kind and environment, in one pass over the records.

    They are counted as ``verify-receipt --summary`` counts them: kind and environment of verified
    records, ``(none)`` for a verified record without an environment.

    Raises:
        PartitionCheckError: a record has no status.
    """
    from pyspark.sql import functions as F

    verified = F.col("status") == "verified"

    def facet(name: str, value: Column) -> Column:
        return F.struct(F.lit(name).alias("facet"), value.alias("value"))

    facets = F.array(
        facet("status", F.coalesce(F.col("status"), F.lit("(none)"))),
        facet("error_code", F.col("error_code")),
        facet("kind", F.when(verified, F.col("kind"))),
        facet("environment", F.when(verified, F.coalesce(F.col("environment"), F.lit("(none)")))),
    )
    rows = (
        frame.select(F.explode(facets).alias("f"))
        .where(F.col("f.value").isNotNull())
        .groupBy("f.facet", "f.value")
        .count()
        .collect()
    )
    counts: dict[str, dict[str, int]] = {
        "status": {},
        "error_code": {},
        "kind": {},
        "environment": {},
    }
    for row in rows:
        counts[row["facet"]][row["value"]] = row["count"]
    if "(none)" in counts["status"]:
        raise PartitionCheckError(f"{counts['status']['(none)']} records have no status")
    ordered = {
        name: dict(sorted(values.items(), key=lambda item: (-item[1], item[0])))
        for name, values in counts.items()
    }
    return {"total": sum(counts["status"].values()), **ordered}


def write_text(spark: SparkSession, path: str, text: str) -> None:
    """Writes a small text file on any Hadoop file system (refusing to overwrite)."""
    fs, target = hadoop_path(spark, path)
    stream = fs.create(target, False)
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()


def spark_failure(error: Exception) -> str:
    """What went wrong in a Spark failure, without the stack traces."""
    text = str(error)
    found = [
        f"PartitionCheckError: {match}" for match in re.findall(r"PartitionCheckError: (.*)", text)
    ]
    found += [
        f"verify-receipt exited with status {status} on an executor (see the executor's log)"
        for status in re.findall(
            r"PIPE_FUNCTION_EXITED.*?exited with error code (-?\d+)", text, re.DOTALL
        )
    ]
    return "\n".join(dict.fromkeys(found)) or text.strip().splitlines()[0]


def run(options: JobOptions) -> dict[str, object]:
    """Runs the job and returns the summary it wrote."""
    marker = f"verify-archive-end-{uuid.uuid4().hex}:"
    check_binary(options.binary)
    task_arguments = verify_arguments(options.verify_options, 1)
    if warning := check_run(options.binary, task_arguments, marker):
        print(f"verify_archive.py: warning: {warning}", file=sys.stderr)
    spark = start_spark(options.master)
    try:
        check_paths(spark, options)
        records = verified_records(spark.sparkContext, options, marker)
        records_frame(spark, records).write.partitionBy("status").parquet(
            f"{options.output}/records"
        )
        summary = summarize(spark.read.parquet(f"{options.output}/records"))
        write_text(spark, f"{options.output}/summary.json", json.dumps(summary, indent=2) + "\n")
        return summary
    finally:
        spark.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """The command: runs the job, prints the summary as JSON, and returns the exit status."""
    try:
        summary = run(parse_arguments(sys.argv[1:] if argv is None else argv))
    except UsageError as error:
        print(f"verify_archive.py: {error}", file=sys.stderr)
        return error.status
    except Exception as error:  # a Spark failure: Py4JJavaError, PySparkException, ...
        if type(error).__module__.split(".")[0] not in ("py4j", "pyspark", __name__):
            raise
        print(f"verify_archive.py: the Spark job failed:\n{spark_failure(error)}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
