/* amber.h: the C runtime of Amber tasks (user/c/runtime/amber.c). Typed wrappers of
 * the syscalls C tasks use, over the raw call and the numbers of amber_sys.h (generated
 * from amber-abi at build time). Console: printf and puts go to the kernel console,
 * one line per DebugWrite; getchar and fgets read console input (ConsoleRead). The
 * heap (malloc, free) is picolibc's, over the task RAM between its bss and its stack:
 * checkpointed with the rest of the task's memory. */
#ifndef AMBER_H
#define AMBER_H

#include <stddef.h>
#include <stdint.h>
#include "amber_sys.h"

/* Each returns AMBER_OK (0) or an AMBER_E_* code. */

/* Ends the task with `code`; never returns. */
_Noreturn void amber_exit(uint32_t code);
/* Writes `len` (at most AMBER_MAX_DEBUG_WRITE) bytes to the console. */
uint32_t amber_debug_write(const void *bytes, size_t len);
/* Takes up to `len` waiting console bytes into `buf`; `*got` = how many (0: none). */
uint32_t amber_console_read(void *buf, size_t len, size_t *got);
/* Gives up the rest of the time slice. */
uint32_t amber_yield(void);
/* Blocks until a checkpoint holding the caller has committed. */
uint32_t amber_checkpoint(void);
/* Ticks since boot; `*exact` = 1 when the counters count instructions (-icount). */
uint32_t amber_now(uint64_t *ticks, uint32_t *exact);
/* Reads / writes `len` (at most AMBER_MAX_NVM_TRANSFER) bytes of the NVM grant in
 * capability slot `slot`, at `offset` in it. */
uint32_t amber_nvm_read(uint32_t slot, uint32_t offset, void *buf, size_t len);
uint32_t amber_nvm_write(uint32_t slot, uint32_t offset, const void *buf, size_t len);
/* Arms timer `timer` to signal `bits` on notification `notify` at tick `deadline`. */
uint32_t amber_timer_set(uint32_t timer, uint32_t notify, uint32_t bits, uint64_t deadline);
/* Waits for bits on notification `notify`; `*bits` = the bits taken. */
uint32_t amber_wait(uint32_t notify, uint32_t *bits);
/* Takes the bits of notification `notify` without blocking (`*bits` = 0: none). */
uint32_t amber_poll(uint32_t notify, uint32_t *bits);
/* Registers the caller's commit watch: the AMBER_COMMIT_WATCH_SIZE bytes at `block`,
 * `commit_bits` and `restore_bits` signalled on notification `notify` after each
 * commit and after a restore; `flags` AMBER_WATCH_*. */
uint32_t amber_commit_watch(void *block, uint32_t notify, uint32_t commit_bits,
                            uint32_t restore_bits, uint32_t flags);
/* The retired-instruction counter (exact under -icount). */
uint64_t amber_instret(void);

/* Drops console input the runtime has taken from the kernel but stdin has not yet
 * handed out (after a restore it belongs to a session that is gone). */
void amber_console_discard_input(void);

/* What reading the console does while no input is waiting: by default it yields; a
 * task that holds a timer overrides it (a strong definition) to sleep instead. */
void amber_idle(void);

#endif
