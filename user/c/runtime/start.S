/* start.S: a C task's entry. The kernel starts `_start` with sp at the top of the
 * task's stack, its data loaded and its bss zeroed; this calls the runtime's start
 * (amber.c), which runs main and exits. Nothing else: no gp, no TLS (picolibc keeps
 * errno in plain data), no constructors. */
    .section .text.start, "ax"
    .global _start
_start:
    call amber_c_start
1:  j 1b
