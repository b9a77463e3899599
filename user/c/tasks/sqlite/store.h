/* store.h: where the sqlite task keeps its database, as the app chose it (amber_env.h:
 * SQLITE_DB_IN_RAM 1, the checkpoint way, or 0, the journal way), and what the VFS
 * (vfs.c) tells the shell. */
#ifndef STORE_H
#define STORE_H

#include <stdint.h>
#include "amber_env.h"

#ifndef SQLITE_DB_IN_RAM
#error "the app must set SQLITE_DB_IN_RAM (env): 1 for the checkpoint way, 0 for the journal way"
#endif

/* The checkpoint way keeps the database in task RAM; the journal way in the NVM grant. */
#define STORE_IN_RAM SQLITE_DB_IN_RAM

/* Capability slots the app gives the task (user/apps/sqlite*.toml). */
#define TIMER_SLOT 0u
#define NOTIFY_SLOT 1u
#define NVM_SLOT 2u

/* Room for the database in task RAM (the checkpoint way). */
#ifndef DB_RAM_MAX
#define DB_RAM_MAX (256u * 1024u)
#endif

/* Bytes the VFS wrote to the NVM (the journal way). */
extern uint64_t store_nvm_bytes;
/* The database file's size in bytes. */
uint32_t store_db_size(void);

#endif
