/* amber.c: the C runtime of Amber tasks. Start-up (main, then exit with its value),
 * the syscall wrappers of amber.h, and picolibc's stdio on the kernel console: output
 * is buffered per line (one DebugWrite, one console line, per line or per
 * AMBER_MAX_DEBUG_WRITE bytes), input comes from ConsoleRead. picolibc's malloc takes
 * its heap from __heap_start..__heap_end, which xtask's link sets to the RAM between
 * the task's bss and its stack. It must never touch memory outside the task's own. */
#include <stdio.h>
#include <stdlib.h>
#include "amber.h"

int main(void);

static uint32_t call(uint32_t nr, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                     uint32_t a4, uint32_t out[6]) {
    uint32_t a[6] = {a0, a1, a2, a3, a4, 0};
    uint32_t r = amber_syscall(nr, a);
    if (out) {
        for (int i = 0; i < 6; i++) out[i] = a[i];
    }
    return r;
}

_Noreturn void amber_exit(uint32_t code) {
    for (;;) call(AMBER_SYS_EXIT, code, 0, 0, 0, 0, NULL);
}

/* picolibc's exit() and abort() end here. */
_Noreturn void _exit(int code) {
    fflush(stdout);
    amber_exit((uint32_t)code);
}

uint32_t amber_debug_write(const void *bytes, size_t len) {
    return call(AMBER_SYS_DEBUG_WRITE, (uint32_t)(uintptr_t)bytes, len, 0, 0, 0, NULL);
}

uint32_t amber_console_read(void *buf, size_t len, size_t *got) {
    uint32_t r[6];
    uint32_t e = call(AMBER_SYS_CONSOLE_READ, (uint32_t)(uintptr_t)buf, len, 0, 0, 0, r);
    *got = e == AMBER_OK ? r[1] : 0;
    return e;
}

uint32_t amber_yield(void) { return call(AMBER_SYS_YIELD, 0, 0, 0, 0, 0, NULL); }

uint32_t amber_checkpoint(void) { return call(AMBER_SYS_CHECKPOINT, 0, 0, 0, 0, 0, NULL); }

uint32_t amber_now(uint64_t *ticks, uint32_t *exact) {
    uint32_t r[6];
    uint32_t e = call(AMBER_SYS_NOW, 0, 0, 0, 0, 0, r);
    if (e == AMBER_OK) {
        *ticks = (uint64_t)r[2] << 32 | r[1];
        *exact = r[3];
    }
    return e;
}

uint32_t amber_nvm_read(uint32_t slot, uint32_t offset, void *buf, size_t len) {
    return call(AMBER_SYS_NVM_READ, slot, offset, (uint32_t)(uintptr_t)buf, len, 0, NULL);
}

uint32_t amber_nvm_write(uint32_t slot, uint32_t offset, const void *buf, size_t len) {
    return call(AMBER_SYS_NVM_WRITE, slot, offset, (uint32_t)(uintptr_t)buf, len, 0, NULL);
}

uint32_t amber_timer_set(uint32_t timer, uint32_t notify, uint32_t bits, uint64_t deadline) {
    return call(AMBER_SYS_TIMER_SET, timer, notify, bits, (uint32_t)deadline,
                (uint32_t)(deadline >> 32), NULL);
}

uint32_t amber_wait(uint32_t notify, uint32_t *bits) {
    uint32_t r[6];
    uint32_t e = call(AMBER_SYS_WAIT, notify, 0, 0, 0, 0, r);
    *bits = e == AMBER_OK ? r[1] : 0;
    return e;
}

uint32_t amber_poll(uint32_t notify, uint32_t *bits) {
    uint32_t r[6];
    uint32_t e = call(AMBER_SYS_POLL, notify, 0, 0, 0, 0, r);
    *bits = e == AMBER_OK ? r[1] : 0;
    return e;
}

uint32_t amber_commit_watch(void *block, uint32_t notify, uint32_t commit_bits,
                            uint32_t restore_bits, uint32_t flags) {
    return call(AMBER_SYS_COMMIT_WATCH, (uint32_t)(uintptr_t)block, notify, commit_bits,
                restore_bits, flags, NULL);
}

uint64_t amber_instret(void) {
    uint32_t hi, lo, again;
    do {
        __asm__ volatile("rdinstreth %0" : "=r"(hi));
        __asm__ volatile("rdinstret %0" : "=r"(lo));
        __asm__ volatile("rdinstreth %0" : "=r"(again));
    } while (hi != again);
    return (uint64_t)hi << 32 | lo;
}

__attribute__((weak)) void amber_idle(void) { amber_yield(); }

/* Console output: one line per DebugWrite. */
static char out_line[AMBER_MAX_DEBUG_WRITE];
static size_t out_len;

static int console_flush(FILE *f) {
    (void)f;
    if (out_len > 0) {
        amber_debug_write(out_line, out_len);
        out_len = 0;
    }
    return 0;
}

static int console_put(char c, FILE *f) {
    out_line[out_len++] = c;
    if (c == '\n' || out_len == sizeof out_line) console_flush(f);
    return (unsigned char)c;
}

/* Console input: what ConsoleRead hands out, a chunk at a time. */
static unsigned char in_buf[64];
static size_t in_len, in_at;

static int console_get(FILE *f) {
    while (in_at == in_len) {
        console_flush(f);
        in_at = 0;
        if (amber_console_read(in_buf, sizeof in_buf, &in_len) != AMBER_OK) {
            in_len = 0;
            return EOF;
        }
        if (in_len == 0) amber_idle();
    }
    return in_buf[in_at++];
}

void amber_console_discard_input(void) { in_at = in_len = 0; }

static FILE console = FDEV_SETUP_STREAM(console_put, console_get, console_flush, _FDEV_SETUP_RW);
FILE *const stdin = &console;
FILE *const stdout = &console;
FILE *const stderr = &console;

void amber_c_start(void) {
    int code = main();
    fflush(stdout);
    amber_exit((uint32_t)code);
}
