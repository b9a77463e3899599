/* vfs.c: SQLite's operating-system layer on Amber (SQLITE_OS_OTHER): one VFS, "amber",
 * whose files live in one of two stores, chosen per app (amber_env.h, SQLITE_DB_IN_RAM):
 *
 * - "checkpoint" (TreeSLS's way): the database is an array in the task's checkpointed
 *   RAM. SQLite keeps its rollback journal in memory (journal_mode=MEMORY), so nothing
 *   here knows about power: a transaction is durable once the checkpoint the shell asks
 *   for after its COMMIT has committed.
 * - "journal" (the MRAM paper's way): the database and its rollback journal are files
 *   in an NVM grant (the `fram` area, capability slot NVM_SLOT), reached with
 *   NvmRead/NvmWrite, whose bytes have reached the NVM when the call returns. SQLite's
 *   sync points (xSync) write the files' sizes, and deleting the journal, SQLite's
 *   commit point, is one write of them.
 *
 * Layout of the NVM grant (journal way; little-endian words):
 *
 * | offset | size | what |
 * |--------|------|------|
 * | 0 | 16 | size record, slot 0: sequence, database size, journal size, check |
 * | 16 | 16 | size record, slot 1 (same) |
 * | 64 | JOURNAL_MAX | the journal file's bytes |
 * | 64 + JOURNAL_MAX | rest | the database file's bytes |
 *
 * A size record is valid when its check is `FORMAT ^ sequence ^ db ^ journal` (rotated);
 * the valid one with the higher sequence holds. Each update writes the slot the newer
 * does not occupy, so a write torn by a power cut leaves the older record standing:
 * file sizes change atomically. A blank grant (no valid record) holds empty files.
 * Writing past a file's room is SQLITE_FULL; nothing else is ever refused.
 * nvm-inspect describes the files from the size records (tools/nvm-inspect, which
 * holds the same constants: change both); SQLite's PRAGMA integrity_check judges them. */
#include <string.h>
#include "amber.h"
#include "amber_env.h"
#include "sqlite3.h"
#include "store.h"

#define FORMAT 0x51A3B001u
#define RECORD_SIZE 16u
#define AREA_START 64u
#define JOURNAL_MAX (64u * 1024u)

/* The two files SQLite may open. */
enum { FILE_DB = 0, FILE_JOURNAL = 1 };

static struct {
    uint32_t sequence;
    uint32_t size[2];
} sizes;

/* Bytes written to the NVM through this VFS (data and size records). */
uint64_t store_nvm_bytes;

#if STORE_IN_RAM
/* The database of the checkpoint way: plain task memory. */
static unsigned char ram_db[DB_RAM_MAX];
#endif

static uint32_t room(int file) {
#if STORE_IN_RAM
    return file == FILE_DB ? DB_RAM_MAX : 0;
#else
    uint32_t nvm = AMBER_MEM_FRAM_LEN;
    return file == FILE_JOURNAL ? JOURNAL_MAX : nvm - AREA_START - JOURNAL_MAX;
#endif
}

#if !STORE_IN_RAM
static uint32_t base(int file) {
    return file == FILE_JOURNAL ? AREA_START : AREA_START + JOURNAL_MAX;
}

static int nvm_read(uint32_t at, void *buf, uint32_t len) {
    unsigned char *p = buf;
    while (len > 0) {
        uint32_t n = len < AMBER_MAX_NVM_TRANSFER ? len : AMBER_MAX_NVM_TRANSFER;
        if (amber_nvm_read(NVM_SLOT, at, p, n) != AMBER_OK) return SQLITE_IOERR_READ;
        at += n, p += n, len -= n;
    }
    return SQLITE_OK;
}

static int nvm_write(uint32_t at, const void *buf, uint32_t len) {
    const unsigned char *p = buf;
    store_nvm_bytes += len;
    while (len > 0) {
        uint32_t n = len < AMBER_MAX_NVM_TRANSFER ? len : AMBER_MAX_NVM_TRANSFER;
        if (amber_nvm_write(NVM_SLOT, at, p, n) != AMBER_OK) return SQLITE_IOERR_WRITE;
        at += n, p += n, len -= n;
    }
    return SQLITE_OK;
}

static uint32_t record_check(const uint32_t r[3]) {
    uint32_t x = FORMAT ^ r[0] ^ (r[1] << 7 | r[1] >> 25) ^ (r[2] << 13 | r[2] >> 19);
    return x;
}

/* Reads the size records; a blank or unreadable grant holds empty files. */
static void sizes_load(void) {
    uint32_t best = 0, found = 0;
    sizes.sequence = 0, sizes.size[0] = 0, sizes.size[1] = 0;
    for (uint32_t slot = 0; slot < 2; slot++) {
        uint32_t r[4];
        if (nvm_read(slot * RECORD_SIZE, r, sizeof r) != SQLITE_OK) continue;
        if (r[3] != record_check(r) || r[1] > room(FILE_DB) || r[2] > room(FILE_JOURNAL))
            continue;
        if (!found || r[0] > best) {
            found = 1, best = r[0];
            sizes.sequence = r[0], sizes.size[FILE_DB] = r[1], sizes.size[FILE_JOURNAL] = r[2];
        }
    }
}

/* Makes the sizes in RAM the NVM's: one 16-byte write into the older slot. */
static int sizes_store(void) {
    uint32_t r[4] = {sizes.sequence + 1, sizes.size[FILE_DB], sizes.size[FILE_JOURNAL], 0};
    r[3] = record_check(r);
    int rc = nvm_write((r[0] % 2) * RECORD_SIZE, r, sizeof r);
    if (rc == SQLITE_OK) sizes.sequence = r[0];
    return rc;
}
#endif

static int store_read(int file, uint32_t at, void *buf, uint32_t len) {
#if STORE_IN_RAM
    (void)file;
    memcpy(buf, ram_db + at, len);
    return SQLITE_OK;
#else
    return nvm_read(base(file) + at, buf, len);
#endif
}

static int store_write(int file, uint32_t at, const void *buf, uint32_t len) {
#if STORE_IN_RAM
    (void)file;
    memcpy(ram_db + at, buf, len);
    return SQLITE_OK;
#else
    return nvm_write(base(file) + at, buf, len);
#endif
}

/* Makes the files' sizes durable (the journal way: a size record; the checkpoint way:
 * nothing, the next checkpoint holds it). */
static int store_sync(void) {
#if STORE_IN_RAM
    return SQLITE_OK;
#else
    return sizes_store();
#endif
}

/* An open file. */
typedef struct {
    sqlite3_file base;
    int file;
} AmberFile;

static int file_close(sqlite3_file *f) {
    (void)f;
    return SQLITE_OK;
}

static int file_read(sqlite3_file *f, void *buf, int amount, sqlite3_int64 offset) {
    int file = ((AmberFile *)f)->file;
    uint32_t size = sizes.size[file];
    if (offset < 0 || amount < 0) return SQLITE_IOERR_READ;
    if ((uint64_t)offset >= size) {
        memset(buf, 0, (size_t)amount);
        return SQLITE_IOERR_SHORT_READ;
    }
    uint32_t have = size - (uint32_t)offset;
    uint32_t n = (uint32_t)amount < have ? (uint32_t)amount : have;
    int rc = store_read(file, (uint32_t)offset, buf, n);
    if (rc != SQLITE_OK) return rc;
    if (n < (uint32_t)amount) {
        memset((char *)buf + n, 0, (size_t)amount - n);
        return SQLITE_IOERR_SHORT_READ;
    }
    return SQLITE_OK;
}

static int file_write(sqlite3_file *f, const void *buf, int amount, sqlite3_int64 offset) {
    int file = ((AmberFile *)f)->file;
    if (offset < 0 || amount < 0) return SQLITE_IOERR_WRITE;
    uint64_t end = (uint64_t)offset + (uint64_t)amount;
    if (end > room(file)) return SQLITE_FULL;
    /* A gap past the end reads as zeros (SQLite never leaves one, but a file must). */
    static const unsigned char zeros[256];
    while (sizes.size[file] < (uint64_t)offset) {
        uint32_t gap = (uint32_t)offset - sizes.size[file];
        uint32_t n = gap < sizeof zeros ? gap : sizeof zeros;
        int rc = store_write(file, sizes.size[file], zeros, n);
        if (rc != SQLITE_OK) return rc;
        sizes.size[file] += n;
    }
    int rc = store_write(file, (uint32_t)offset, buf, (uint32_t)amount);
    if (rc != SQLITE_OK) return rc;
    if (end > sizes.size[file]) sizes.size[file] = (uint32_t)end;
    return SQLITE_OK;
}

static int file_truncate(sqlite3_file *f, sqlite3_int64 size) {
    int file = ((AmberFile *)f)->file;
    if (size < 0 || (uint64_t)size > room(file)) return SQLITE_IOERR_TRUNCATE;
    if ((uint32_t)size < sizes.size[file]) sizes.size[file] = (uint32_t)size;
    return store_sync();
}

static int file_sync(sqlite3_file *f, int flags) {
    (void)f, (void)flags;
    return store_sync();
}

static int file_size(sqlite3_file *f, sqlite3_int64 *size) {
    *size = sizes.size[((AmberFile *)f)->file];
    return SQLITE_OK;
}

/* One connection, one process: locks always succeed. */
static int file_lock(sqlite3_file *f, int level) {
    (void)f, (void)level;
    return SQLITE_OK;
}

static int file_check_reserved(sqlite3_file *f, int *out) {
    (void)f;
    *out = 0;
    return SQLITE_OK;
}

static int file_control(sqlite3_file *f, int op, void *arg) {
    (void)f, (void)op, (void)arg;
    return SQLITE_NOTFOUND;
}

static int file_sector_size(sqlite3_file *f) {
    (void)f;
    return 512;
}

/* Writes of a sector are not atomic, and a power cut may leave any byte of one. */
static int file_device_characteristics(sqlite3_file *f) {
    (void)f;
    return 0;
}

static const sqlite3_io_methods io_methods = {
    1,
    file_close,
    file_read,
    file_write,
    file_truncate,
    file_sync,
    file_size,
    file_lock,
    file_lock,
    file_check_reserved,
    file_control,
    file_sector_size,
    file_device_characteristics,
    0, 0, 0, 0, 0, 0,
};

/* Which file a name is: the database, or its journal (name + "-journal"). */
static int file_of(const char *name) {
    size_t n = strlen(name);
    const char *j = "-journal";
    size_t jn = strlen(j);
    if (n > jn && strcmp(name + n - jn, j) == 0) return FILE_JOURNAL;
    return FILE_DB;
}

static int vfs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
                    int *out_flags) {
    (void)vfs;
    AmberFile *a = (AmberFile *)f;
    a->base.pMethods = 0;
    /* Only the main database and its journal have a place; temporary files are in
     * memory (SQLITE_TEMP_STORE=3), and a super-journal (several databases) has none. */
    if (name == 0 || !(flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_MAIN_JOURNAL)))
        return SQLITE_CANTOPEN;
    a->file = file_of(name);
    if (room(a->file) == 0) return SQLITE_CANTOPEN;
    a->base.pMethods = &io_methods;
    if (out_flags) *out_flags = flags;
    return SQLITE_OK;
}

static int vfs_delete(sqlite3_vfs *vfs, const char *name, int sync_dir) {
    (void)vfs, (void)sync_dir;
    int file = file_of(name);
    sizes.size[file] = 0;
    return store_sync();
}

static int vfs_access(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    (void)vfs;
    int file = file_of(name);
    *out = flags == SQLITE_ACCESS_EXISTS ? sizes.size[file] > 0 : 1;
    return SQLITE_OK;
}

static int vfs_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out) {
    (void)vfs;
    sqlite3_snprintf(n, out, "%s", name);
    return SQLITE_OK;
}

/* No randomness source but the instruction counter; SQLite uses it for temporary
 * names and the journal's nonce, never for correctness here. */
static int vfs_randomness(sqlite3_vfs *vfs, int n, char *out) {
    (void)vfs;
    uint64_t x = amber_instret() | 1;
    for (int i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        out[i] = (char)x;
    }
    return n;
}

static int vfs_sleep(sqlite3_vfs *vfs, int micros) {
    (void)vfs;
    amber_yield();
    return micros;
}

/* SQLite's clock (CURRENT_TIMESTAMP, julianday('now')): the kernel's ticks since
 * boot from the Unix epoch; Amber has no calendar. */
static int vfs_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    (void)vfs;
    uint64_t ticks = 0;
    uint32_t exact = 0;
    amber_now(&ticks, &exact);
    *out = (sqlite3_int64)210866760000000ll + (sqlite3_int64)(ticks * 10);
    return SQLITE_OK;
}

static int vfs_current_time(sqlite3_vfs *vfs, double *out) {
    sqlite3_int64 ms = 0;
    vfs_current_time_int64(vfs, &ms);
    *out = ms / 86400000.0;
    return SQLITE_OK;
}

static int vfs_last_error(sqlite3_vfs *vfs, int n, char *out) {
    (void)vfs, (void)n, (void)out;
    return 0;
}

static sqlite3_vfs amber_vfs = {
    2,
    sizeof(AmberFile),
    64,
    0,
    "amber",
    0,
    vfs_open,
    vfs_delete,
    vfs_access,
    vfs_full_pathname,
    0, 0, 0, 0,
    vfs_randomness,
    vfs_sleep,
    vfs_current_time,
    vfs_last_error,
    vfs_current_time_int64,
    0, 0, 0,
};

int sqlite3_os_init(void) {
#if !STORE_IN_RAM
    sizes_load();
#endif
    return sqlite3_vfs_register(&amber_vfs, 1);
}

int sqlite3_os_end(void) { return SQLITE_OK; }

uint32_t store_db_size(void) { return sizes.size[FILE_DB]; }
