// store-floor: the CPU a durable SQLite store needs for each notification when it does nothing
// but write rows: one row of ROW_BYTES (the stored event) in a rowid table and one small row in
// each of TREES further B-trees, every insert at a B-tree's right edge, in WAL mode with
// synchronous = FULL (as receiptkit-server's store), PER_COMMIT notifications a transaction (a
// fraction is averaged over commits), prepared statements reused. No reads, no derivation, no
// rendering, no thread handing work over: a lower bound for what storing costs a real server on
// the machine it runs on. Prints the microseconds of CPU (user + system) a notification.
//
// receiptkit-server's first purchase, counted in a database it wrote: an event row of about
// 4,600 bytes (the stored JWS and its record) and 15 more B-trees (the events' dedup index,
// sqlite_sequence, subscriptions and its next_change_at index, customer_subscriptions and its
// two indexes, event_subscriptions, transaction_copies and its two indexes, renewal_info_copies,
// change_events, change_events_key, feed_counter); 4 and 128 a commit are the most that 4 and 128
// connections allow:
//
//   clang -O2 -o /tmp/store-floor Server/scripts/store-floor.c -lsqlite3
//   taskset -c 1 /tmp/store-floor /tmp/floor.sqlite 20000 4 4600 15
//   taskset -c 1 /tmp/store-floor /tmp/floor.sqlite 20000 128 4600 15
//
// Usage: store-floor DATABASE COUNT PER_COMMIT ROW_BYTES TREES   (DATABASE is deleted first)
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static void check(int rc, sqlite3 *db, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "store-floor: %s: %s\n", what, sqlite3_errmsg(db));
        exit(1);
    }
}

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: store-floor DATABASE COUNT PER_COMMIT ROW_BYTES TREES\n");
        return 64;
    }
    const char *path = argv[1];
    long count = atol(argv[2]), row_bytes = atol(argv[4]), trees = atol(argv[5]);
    double per_commit = atof(argv[3]);
    if (count <= 0 || per_commit < 1 || row_bytes <= 0 || trees < 0 || trees > 64) {
        fprintf(stderr, "store-floor: COUNT > 0, PER_COMMIT >= 1, ROW_BYTES > 0, 0 <= TREES <= 64\n");
        return 64;
    }
    char name[4096];
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "%s%s", path, suffixes[i]);
        unlink(name);
    }
    sqlite3 *db;
    check(sqlite3_open(path, &db), db, "open");
    check(sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
                           "CREATE TABLE events (id INTEGER PRIMARY KEY, body BLOB NOT NULL)", NULL, NULL, NULL), db, "schema");
    sqlite3_stmt *insert_event, *insert_row[64], *begin, *commit;
    check(sqlite3_prepare_v2(db, "INSERT INTO events (body) VALUES (?)", -1, &insert_event, NULL), db, "prepare");
    for (long t = 0; t < trees; t++) {
        char sql[256];
        snprintf(sql, sizeof sql, "CREATE TABLE t%ld (k INTEGER PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID", t);
        check(sqlite3_exec(db, sql, NULL, NULL, NULL), db, "schema");
        snprintf(sql, sizeof sql, "INSERT INTO t%ld (k, v) VALUES (?, ?)", t);
        check(sqlite3_prepare_v2(db, sql, -1, &insert_row[t], NULL), db, "prepare");
    }
    check(sqlite3_prepare_v2(db, "BEGIN", -1, &begin, NULL), db, "prepare");
    check(sqlite3_prepare_v2(db, "COMMIT", -1, &commit, NULL), db, "prepare");
    unsigned char *body = malloc(row_bytes);
    for (long i = 0; i < row_bytes; i++) body[i] = (unsigned char)(i * 131 + 7);
    static const char value[] = "0123456789012345678901234567890123456789";  // 40 bytes, as an id or two

    double start = cpu_seconds(), owed = 0;
    long written = 0, commits = 0;
    while (written < count) {
        owed += per_commit;
        long batch = (long)owed;
        owed -= batch;
        if (batch > count - written) batch = count - written;
        check(sqlite3_step(begin), db, "begin");
        sqlite3_reset(begin);
        for (long n = 0; n < batch; n++, written++) {
            body[written % row_bytes] ^= 1;
            sqlite3_bind_blob(insert_event, 1, body, (int)row_bytes, SQLITE_STATIC);
            check(sqlite3_step(insert_event), db, "insert");
            sqlite3_reset(insert_event);
            for (long t = 0; t < trees; t++) {
                sqlite3_bind_int64(insert_row[t], 1, written);
                sqlite3_bind_text(insert_row[t], 2, value, sizeof value - 1, SQLITE_STATIC);
                check(sqlite3_step(insert_row[t]), db, "insert");
                sqlite3_reset(insert_row[t]);
            }
        }
        check(sqlite3_step(commit), db, "commit");
        sqlite3_reset(commit);
        commits++;
    }
    double cpu = cpu_seconds() - start;
    printf("%ld notifications in %ld commits: %.1f µs of CPU a notification\n", count, commits, cpu * 1e6 / count);
    for (long t = 0; t < trees; t++) sqlite3_finalize(insert_row[t]);
    sqlite3_finalize(insert_event);
    sqlite3_finalize(begin);
    sqlite3_finalize(commit);
    free(body);
    return sqlite3_close(db) == SQLITE_OK ? 0 : 1;
}
