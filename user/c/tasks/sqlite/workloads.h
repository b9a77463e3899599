/* workloads.h: what main.c shares with the workloads (crash.c, bench.c). */
#ifndef WORKLOADS_H
#define WORKLOADS_H

#include "sqlite3.h"

/* The open database. */
extern sqlite3 *db;
/* Makes the last transaction durable (the checkpoint way: a committed checkpoint); 0
 * when it could not be. */
int durable(void);
/* Whether the system was restored from a checkpoint since the last call. */
int was_restored(void);
/* Runs `sql`, printing SQLite's message on an error; returns its result code. */
int exec_quiet(const char *sql);

_Noreturn void crash_workload(void);
_Noreturn void bench_workload(void);

#endif
