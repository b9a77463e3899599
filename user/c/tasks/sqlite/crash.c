/* crash.c: the crash workload (SQLITE_WORKLOAD 1). Transaction T inserts T % 5 + 1 rows
 * of T and deletes the rows of T - WINDOW, so the table holds exactly transactions
 * max(1, T - WINDOW + 1)..T, each whole, whatever T. It prints `sqlite: committed T`
 * only once T is durable. After every start and every restore it checks the database
 * and prints `sqlite: recovered T transactions, integrity ok` (the harness holds T to
 * the last committed T it saw: never less, at most one more, the one whose COMMIT was
 * durable before its line was printed), or `sqlite: VIOLATION ...`. */
#include <stdio.h>
#include "amber.h"
#include "store.h"
#include "workloads.h"

#define WINDOW 50

static int rows_of(sqlite3_int64 t) { return (int)(t % 5) + 1; }

static sqlite3_int64 query_int(const char *sql) {
    sqlite3_stmt *st = NULL;
    sqlite3_int64 v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static _Noreturn void violation(const char *what, long long a, long long b) {
    printf("sqlite: VIOLATION %s (%lld, %lld)\n", what, a, b);
    amber_exit(2);
}

/* Checks the database; returns the last transaction it holds. */
static sqlite3_int64 check(void) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK)
        violation("integrity_check cannot run", 0, 0);
    int ok = sqlite3_step(st) == SQLITE_ROW &&
             sqlite3_stricmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
    if (!ok) printf("sqlite: integrity_check says: %s\n", sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (!ok) violation("integrity_check is not ok", 0, 0);
    sqlite3_int64 last = query_int("SELECT coalesce(max(txn), 0) FROM t");
    sqlite3_int64 first = query_int("SELECT coalesce(min(txn), 0) FROM t");
    sqlite3_int64 txns = query_int("SELECT count(DISTINCT txn) FROM t");
    sqlite3_int64 rows = query_int("SELECT count(*) FROM t");
    sqlite3_int64 want_first = last > WINDOW ? last - WINDOW + 1 : (last ? 1 : 0);
    if (first != want_first) violation("first transaction held", first, want_first);
    if (txns != (last ? last - first + 1 : 0)) violation("transactions held", txns, last);
    sqlite3_int64 want_rows = 0;
    for (sqlite3_int64 t = first; t >= 1 && t <= last; t++) want_rows += rows_of(t);
    if (rows != want_rows) violation("rows held (a transaction in part)", rows, want_rows);
    /* Every transaction whole: no transaction has another count of rows. */
    sqlite3_int64 torn = query_int(
        "SELECT count(*) FROM (SELECT txn, count(*) AS n FROM t GROUP BY txn "
        "HAVING n != txn % 5 + 1)");
    if (torn != 0) violation("transactions held in part", torn, 0);
    printf("sqlite: recovered %lld transactions, integrity ok\n", (long long)last);
    return last;
}

_Noreturn void crash_workload(void) {
    if (exec_quiet("CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, txn INT, v TEXT);"
                   "CREATE INDEX IF NOT EXISTS t_txn ON t(txn)") != SQLITE_OK ||
        !durable())
        amber_exit(3);
    sqlite3_int64 t = check();
    char sql[256];
    for (;;) {
        t++;
        if (exec_quiet("BEGIN") != SQLITE_OK) amber_exit(3);
        for (int i = 0; i < rows_of(t); i++) {
            sqlite3_snprintf(sizeof sql, sql,
                             "INSERT INTO t(txn, v) VALUES(%lld, printf('%%.60c', %d))",
                             (long long)t, 'a' + (int)(t % 26));
            if (exec_quiet(sql) != SQLITE_OK) amber_exit(3);
        }
        sqlite3_snprintf(sizeof sql, sql, "DELETE FROM t WHERE txn = %lld",
                         (long long)(t - WINDOW));
        if (exec_quiet(sql) != SQLITE_OK || exec_quiet("COMMIT") != SQLITE_OK || !durable())
            amber_exit(3);
        printf("sqlite: committed %lld\n", (long long)t);
        if (was_restored()) {
            printf("sqlite: restored from a checkpoint\n");
            t = check();
        }
    }
}
