/* bench.c: the benchmark workload (SQLITE_WORKLOAD 2), run under -icount by
 * `cargo xtask bench`. Each phase prints `sqlite-bench: begin PHASE` and then
 * `sqlite-bench: PHASE ops N txns M instructions I vfs-nvm-bytes B`: its operations,
 * its durable transactions, the instructions retired meanwhile (the task's and the
 * kernel's, checkpoints included) and the bytes the VFS wrote to NVM (the journal way;
 * the host adds the bytes of the checkpoints the kernel logged between the two lines).
 * Phases: inserts in transactions of 1, 10 and 100 rows; point selects by key; a range
 * scan; single-row updates; and kvbench's put workload (4-byte keys, 16-byte values
 * over 256 keys) through SQL. It measures; it never judges a figure. */
#include <stdio.h>
#include "amber.h"
#include "store.h"
#include "workloads.h"

static sqlite3_stmt *prepare(const char *sql) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        printf("sqlite-bench: cannot prepare %s: %s\n", sql, sqlite3_errmsg(db));
        amber_exit(3);
    }
    return st;
}

static void step_done(sqlite3_stmt *st) {
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    }
    if (rc != SQLITE_DONE) {
        printf("sqlite-bench: step: %s\n", sqlite3_errmsg(db));
        amber_exit(3);
    }
    sqlite3_reset(st);
}

static void commit(void) {
    if (exec_quiet("COMMIT") != SQLITE_OK || !durable()) amber_exit(3);
}

static uint64_t started, bytes_at_start;

static void begin_phase(const char *name) {
    printf("sqlite-bench: begin %s\n", name);
    bytes_at_start = store_nvm_bytes;
    started = amber_instret();
}

static void end_phase(const char *name, int ops, int txns) {
    uint64_t spent = amber_instret() - started;
    printf("sqlite-bench: %s ops %d txns %d instructions %llu vfs-nvm-bytes %llu\n", name, ops,
           txns, (unsigned long long)spent, (unsigned long long)(store_nvm_bytes - bytes_at_start));
}

/* Inserts `txns` transactions of `rows` rows each, keys from `*next`. */
static void inserts(const char *name, int txns, int rows, int *next) {
    sqlite3_stmt *ins = prepare("INSERT INTO b(k, v) VALUES(?1, printf('%.40c', 'x'))");
    begin_phase(name);
    for (int t = 0; t < txns; t++) {
        exec_quiet("BEGIN");
        for (int r = 0; r < rows; r++) {
            sqlite3_bind_int(ins, 1, (*next)++);
            step_done(ins);
        }
        commit();
    }
    end_phase(name, txns * rows, txns);
    sqlite3_finalize(ins);
}

_Noreturn void bench_workload(void) {
    if (exec_quiet("CREATE TABLE b(k INTEGER PRIMARY KEY, v TEXT);"
                   "CREATE TABLE kv(k INTEGER PRIMARY KEY, v BLOB)") != SQLITE_OK ||
        !durable())
        amber_exit(3);
    int next = 1;
    inserts("insert-1", 50, 1, &next);
    inserts("insert-10", 10, 10, &next);
    inserts("insert-100", 3, 100, &next);
    int keys = next - 1;

    sqlite3_stmt *sel = prepare("SELECT v FROM b WHERE k = ?1");
    begin_phase("select-point");
    for (int i = 0; i < 200; i++) {
        sqlite3_bind_int(sel, 1, 1 + (i * 37) % keys);
        step_done(sel);
    }
    end_phase("select-point", 200, 0);
    sqlite3_finalize(sel);

    sqlite3_stmt *scan = prepare("SELECT count(*), sum(length(v)) FROM b WHERE k BETWEEN ?1 AND ?1 + 99");
    begin_phase("scan-100");
    for (int i = 0; i < 10; i++) {
        sqlite3_bind_int(scan, 1, 1 + i * 30);
        step_done(scan);
    }
    end_phase("scan-100", 10, 0);
    sqlite3_finalize(scan);

    sqlite3_stmt *upd = prepare("UPDATE b SET v = printf('%.40c', 'y') WHERE k = ?1");
    begin_phase("update-1");
    for (int i = 0; i < 50; i++) {
        exec_quiet("BEGIN");
        sqlite3_bind_int(upd, 1, 1 + (i * 53) % keys);
        step_done(upd);
        commit();
    }
    end_phase("update-1", 50, 50);
    sqlite3_finalize(upd);

    /* kvbench's puts (uniform keys, 16-byte values), one durable put per transaction. */
    sqlite3_stmt *put = prepare("INSERT OR REPLACE INTO kv(k, v) VALUES(?1, ?2)");
    uint32_t x = 0x4B564245u;
    unsigned char value[16];
    begin_phase("kv-put-16");
    for (int i = 0; i < 100; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        for (unsigned j = 0; j < sizeof value; j++) value[j] = (unsigned char)(x >> (j % 4 * 8));
        exec_quiet("BEGIN");
        sqlite3_bind_int(put, 1, (int)(x % 256));
        sqlite3_bind_blob(put, 2, value, sizeof value, SQLITE_STATIC);
        step_done(put);
        commit();
    }
    end_phase("kv-put-16", 100, 100);
    sqlite3_finalize(put);
    printf("sqlite-bench: done (database %lu bytes)\n", (unsigned long)store_db_size());
    for (;;) amber_idle();
}
