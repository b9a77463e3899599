/* main.c: SQLite on Amber. One task: SQLite (the amalgamation, compiled for RV32IMC
 * without an OS), its VFS (vfs.c), a fixed heap in task memory, and what the app asks
 * for (amber_env.h, SQLITE_WORKLOAD):
 *
 * - 0, the shell: reads SQL from the console (typed or piped), runs each complete
 *   statement and prints its rows (`a|b|c`, NULL empty) or SQLite's own error message,
 *   and goes on.
 * - 1, the crash workload: transactions of 1 to 5 rows that also delete the rows of the
 *   transaction 50 before, each printed once durable; after every start and every
 *   restore it checks the database (PRAGMA integrity_check, every transaction it holds
 *   whole, the last ones present) and says what it found.
 * - 2, the benchmark (bench.c).
 *
 * A transaction is durable when SQLite's COMMIT returns on the journal way; on the
 * checkpoint way when the checkpoint the task asks for after the COMMIT has committed
 * (`durable()`). It must never print a transaction as committed before that. */
#include <stdio.h>
#include <string.h>
#include "amber.h"
#include "amber_env.h"
#include "sqlite3.h"
#include "store.h"
#include "workloads.h"

#ifndef SQLITE_HEAP_BYTES
#define SQLITE_HEAP_BYTES (256u * 1024u)
#endif

/* SQLite's heap (memsys5): part of the task's checkpointed RAM. */
static uint64_t heap[SQLITE_HEAP_BYTES / 8];

sqlite3 *db;
/* Whether a statement may have changed the database since the last checkpoint. */
static int changed;

/* Notification bits: the idle timer's, and the kernel's after a restore. */
#define TIMER_BIT 1u
#define RESTORED_BIT 2u
static uint32_t restored;
static uint64_t watch_block[AMBER_COMMIT_WATCH_SIZE / 8];

static void take_bits(uint32_t bits) {
    if (bits & RESTORED_BIT) restored = 1;
}

/* While the console has nothing: sleep a tick on the timer. */
void amber_idle(void) {
    uint64_t now = 0;
    uint32_t exact = 0, bits = 0;
    if (amber_now(&now, &exact) != AMBER_OK ||
        amber_timer_set(TIMER_SLOT, NOTIFY_SLOT, TIMER_BIT, now + 1) != AMBER_OK) {
        amber_yield();
        return;
    }
    if (amber_wait(NOTIFY_SLOT, &bits) == AMBER_OK) take_bits(bits);
}

/* Whether the system was restored from a checkpoint since the last call. */
int was_restored(void) {
    uint32_t bits = 0;
    if (amber_poll(NOTIFY_SLOT, &bits) == AMBER_OK) take_bits(bits);
    int r = (int)restored;
    restored = 0;
    return r;
}

int durable(void) {
    if (!STORE_IN_RAM || !changed || !sqlite3_get_autocommit(db)) return 1;
    uint32_t e = amber_checkpoint();
    if (e != AMBER_OK) {
        printf("Error: the checkpoint did not commit: %s\n", amber_strerror(e));
        return 0;
    }
    changed = 0;
    return 1;
}

int exec_quiet(const char *sql) {
    char *err = NULL;
    changed = 1;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) {
        printf("Error: %s\n", err ? err : sqlite3_errstr(rc));
        sqlite3_free(err);
    }
    return rc;
}

static void open_db(void) {
    int rc = sqlite3_config(SQLITE_CONFIG_HEAP, heap, (int)sizeof heap, 64);
    if (rc == SQLITE_OK) rc = sqlite3_config(SQLITE_CONFIG_LOOKASIDE, 0, 0);
    if (rc == SQLITE_OK) rc = sqlite3_initialize();
    if (rc == SQLITE_OK)
        rc = sqlite3_open_v2("amber.db", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                             "amber");
    if (rc != SQLITE_OK) {
        printf("sqlite: cannot open the database: %s\n", sqlite3_errstr(rc));
        amber_exit(1);
    }
    /* The checkpoint way keeps no journal outside memory: the checkpoint is the commit. */
    exec_quiet(STORE_IN_RAM ? "PRAGMA journal_mode=MEMORY" : "PRAGMA journal_mode=DELETE");
    exec_quiet("PRAGMA cache_size=-64");
    if (STORE_IN_RAM)
        amber_commit_watch(watch_block, NOTIFY_SLOT, 0, RESTORED_BIT, 0);
}

/* Runs every statement of `sql`, printing rows and errors; stops at the first error. */
static void run(const char *sql) {
    const char *tail = sql;
    while (*tail) {
        sqlite3_stmt *st = NULL;
        const char *next = NULL;
        int rc = sqlite3_prepare_v2(db, tail, -1, &st, &next);
        if (rc != SQLITE_OK) {
            printf("Error: %s\n", sqlite3_errmsg(db));
            break;
        }
        tail = next;
        if (st == NULL) continue; /* whitespace or a comment */
        if (!sqlite3_stmt_readonly(st)) changed = 1;
        int columns = sqlite3_column_count(st);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            for (int i = 0; i < columns; i++) {
                const unsigned char *v = sqlite3_column_text(st, i);
                printf("%s%s", i ? "|" : "", v ? (const char *)v : "");
            }
            printf("\n");
        }
        if (rc != SQLITE_DONE) printf("Error: %s\n", sqlite3_errmsg(db));
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) break;
    }
    durable();
}

#define STATEMENT_MAX 4096

static void shell(void) {
    static char statement[STATEMENT_MAX];
    static char line[1024];
    size_t len = 0, line_len = 0;
    int too_long = 0;
    printf("SQLite %s on Amber (%s); end each statement with ';'\n", sqlite3_libversion(),
           STORE_IN_RAM ? "whole-system persistence: the database in checkpointed memory"
                        : "its own rollback journal on NVM");
    printf("sqlite> \n");
    for (;;) {
        if (was_restored()) {
            /* The input of the session the power cut ended is not this one's. */
            amber_console_discard_input();
            len = 0, line_len = 0, too_long = 0;
            printf("sqlite: restored from a checkpoint\nsqlite> \n");
        }
        int c = getchar();
        if (c == EOF) continue;
        if (c != '\n' && c != '\r') {
            if (line_len < sizeof line - 1) line[line_len++] = (char)c;
            else too_long = 1;
            continue;
        }
        line[line_len] = 0;
        if (line_len == 0 && len == 0) continue;
        printf("%s %s\n", len ? "   ...>" : "sqlite>", line);
        if (len + line_len + 2 > sizeof statement) too_long = 1;
        if (!too_long) {
            memcpy(statement + len, line, line_len);
            len += line_len;
            statement[len++] = '\n';
            statement[len] = 0;
        }
        line_len = 0;
        if (too_long) {
            printf("Error: a statement is at most %u bytes\n", STATEMENT_MAX - 2);
            len = 0, too_long = 0;
        } else if (sqlite3_complete(statement)) {
            run(statement);
            len = 0;
        } else {
            continue;
        }
        printf("sqlite> \n");
    }
}

int main(void) {
    open_db();
    switch (SQLITE_WORKLOAD) {
    case 1:
        crash_workload();
        break;
    case 2:
        bench_workload();
        break;
    default:
        shell();
    }
    return 0;
}
