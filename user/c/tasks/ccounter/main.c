/* ccounter: the C example task, a crash workload. Its counter lives in memory from
 * malloc (the task's checkpointed RAM), kept twice (the value and its complement) so
 * that a torn or mixed restore would show. It adds ROUNDS, asks for a checkpoint (the
 * call returns once it has committed) and prints the count: every printed count is
 * committed, so after any power cut the counts printed never go back. At start it
 * shows that bad syscall arguments get the ABI's error codes, as a Rust task's do. */
#include <stdio.h>
#include <stdlib.h>
#include "amber.h"

#define ROUNDS 1000u

struct counter {
    uint32_t value;
    uint32_t check; /* ~value */
};

static struct counter *counter;

static void show_abi_errors(void) {
    uint32_t raw[6] = {0};
    char big[AMBER_MAX_DEBUG_WRITE + 1] = {0};
    uint32_t bad_pointer = amber_debug_write((const void *)4, 4);
    uint32_t too_long = amber_debug_write(big, sizeof big);
    uint32_t bad_syscall = amber_syscall(999, raw);
    uint32_t bad_slot = amber_nvm_read(99, 0, big, 4);
    uint32_t empty_slot = amber_nvm_read(0, 0, big, 4);
    printf("ccounter: abi errors %lu %lu %lu %lu %lu (%s)\n", (unsigned long)bad_pointer,
           (unsigned long)too_long, (unsigned long)bad_syscall, (unsigned long)bad_slot,
           (unsigned long)empty_slot, amber_strerror(bad_pointer));
}

int main(void) {
    if (counter == NULL) {
        show_abi_errors();
        counter = malloc(sizeof *counter);
        if (counter == NULL) {
            printf("ccounter: malloc failed\n");
            return 1;
        }
        counter->value = 0;
        counter->check = ~0u;
    }
    for (;;) {
        for (uint32_t i = 0; i < ROUNDS; i++) {
            if (counter->check != ~counter->value) {
                printf("ccounter: VIOLATION value %lu check %lx\n",
                       (unsigned long)counter->value, (unsigned long)counter->check);
                return 2;
            }
            counter->value++;
            counter->check = ~counter->value;
        }
        uint32_t e = amber_checkpoint();
        if (e != AMBER_OK) {
            printf("ccounter: checkpoint failed: %s\n", amber_strerror(e));
            return 3;
        }
        printf("ccounter: %lu committed\n", (unsigned long)counter->value);
    }
}
