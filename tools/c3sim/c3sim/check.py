"""`python -m c3sim.check --images DIR --work DIR`: the test command's simulator checks
on the images `cargo xtask build --board esp32c3 APP` wrote. The demo boots on a blank
FRAM to its tasks' console lines; the faulter's six forbidden accesses are each
stopped by PMP (or as an illegal instruction) with the cause and address expected, the
task restarted, and the heartbeat beats on; ckcounter is cut at a random instruction count
CYCLES times, each run on the FRAM the last one left, and the counter it prints never
goes below the last value a run printed as committed; a brown-out leads to one last
checkpoint, and the next boot recovers exactly it, and so does a falling edge of the
external comparator on ckcounter-comparator's GPIO3; the heap app resumes from a
brown-out's checkpoint and from random cuts with both clients' heaps as they left
them. Prints the cycle summaries and the instruction rate. Exits 1 on the first
failure, saying what was seen.
"""

import argparse
import os
import random
import re
import sys
import time

from .machine import Machine
from .periph import Mb85rs4mt

DEMO_BUDGET = 120_000_000
DEMO_LINES = [
    "formatted a new NVM of 524288 bytes",
    "fresh start: app demo booted and checkpoint 1 committed",
    "[hello] Hello from U-mode!",
    "[heartbeat] heartbeat 1",
]
COMMITTED = re.compile(rb"counter: (\d+) committed")


def boot(bin_bytes, fram, budget, until=None, **machine):
    m = Machine(bin_bytes, fram, **machine)
    start = time.monotonic()
    stop = m.run(budget, until)
    seconds = time.monotonic() - start
    m.close()
    return m, stop, seconds


def check_demo(images, work):
    fram = os.path.join(work, "demo-fram.img")
    if os.path.exists(fram):
        os.remove(fram)
    with open(os.path.join(images, "demo.bin"), "rb") as f:
        m, stop, seconds = boot(
            f.read(), fram, DEMO_BUDGET, lambda m: all(line.encode() in m.console for line in DEMO_LINES)
        )
    text = m.console.decode(errors="replace")
    if stop is not None:
        raise SystemExit(f"demo: the run stopped: {stop}\n{text}")
    missing = [line for line in DEMO_LINES if line not in text]
    if missing:
        raise SystemExit(f"demo: no console line with {missing} in {DEMO_BUDGET} instructions:\n{text}")
    if "fault" in text or "ERROR" in text:
        raise SystemExit(f"demo: a task faulted or the kernel reported an error:\n{text}")
    check_clock(m, text)
    print(f"c3sim check: demo booted to its tasks' lines in {m.instructions} instructions "
          f"({m.instructions / seconds / 1e6:.2f} M instructions per second); data loads through "
          f"the instruction bus: {m.ibus_word_loads} aligned words, no other (any other stops "
          f"the run)")


CLOCK_LINE = "CPU clock: 160 MHz from the 480 MHz PLL (was 40 MHz from the 40 MHz crystal / 1)"
CLOCK_LINE_ON_PLL = "CPU clock: 160 MHz from the 480 MHz PLL (was 80 MHz from the 480 MHz PLL)"
FRAM_LINE = "FRAM: MB85RS4MT on GP-SPI2 (SCK GPIO6, MISO GPIO2, MOSI GPIO7, CS GPIO1)"
FRAM_LINE_Y = "FRAM: MB85RS4MTY on GP-SPI2"
TICK_LINE = 1  # kernel/src/board/esp32c3/mod.rs
# The board's routes (kernel/src/board/esp32c3/mod.rs): source -> line.
ROUTES = {37: 1, 21: 2, 27: 3}
TICKS_PER_SECOND = 100


def check_clock(m, text):
    """From the ROM's power-on state (40 MHz from the crystal) the board brought the
    BBPLL up as the model demands (powered, configured for 480 MHz over the ROM's analog
    I2C functions, calibrating) and moved the CPU to 160 MHz, said so, kept the
    console at 115200 baud throughout (the UART model stops the run otherwise), and the
    SYSTIMER tick stayed 100 per simulated second (time being each cycle at the clock of
    its moment). The interrupt matrix holds the board's three routes only: the planted
    USB-Serial-JTAG leftover was unmapped before it could interrupt."""
    if m.system.cpu_hz() != 160_000_000 or CLOCK_LINE not in text or not m.analog.bbpll_configured():
        raise SystemExit(f"clock: CPU at {m.system.cpu_hz()} Hz after SYSTEM writes "
                         f"{[(hex(a), hex(b)) for a, b in m.system.clock_writes]} and analog writes "
                         f"{m.analog.writes}, expected 160 MHz from a configured BBPLL and "
                         f"{CLOCK_LINE!r}:\n{text}")
    seconds = m.timebase.seconds()
    ticks = m.interrupts_on_line[TICK_LINE]
    if abs(ticks - TICKS_PER_SECOND * seconds) > 2:
        raise SystemExit(f"clock: {ticks} ticks in {seconds:.3f} simulated seconds, expected "
                         f"{TICKS_PER_SECOND} per second")
    mapped = {src: line for src, line in enumerate(m.intmatrix.map) if line}
    lines = {line for line in range(32) if m.intmatrix.enable >> line & 1}
    if mapped != ROUTES or lines != set(ROUTES.values()) or m.interrupts_on_line[m.STRAY_LINE]:
        raise SystemExit(f"interrupts: sources mapped {mapped}, lines enabled {sorted(lines)}, "
                         f"{m.interrupts_on_line[m.STRAY_LINE]} interrupts on the planted line "
                         f"{m.STRAY_LINE}; expected {ROUTES} and lines {sorted(ROUTES.values())} only")
    if FRAM_LINE not in text:
        raise SystemExit(f"FRAM: no {FRAM_LINE!r}:\n{text}")
    print(f"c3sim check: CPU from 40 MHz (crystal) to 160 MHz (BBPLL at 480 MHz: {len(m.analog.writes)} "
          f"analog register writes through the ROM), console at {sorted(m.uart.bauds)} baud "
          f"throughout; {ticks} ticks in {seconds:.3f} simulated seconds ({ticks / seconds:.1f} per "
          f"second); the interrupt matrix holds the board's routes {ROUTES} only (the planted "
          f"leftover never interrupted)")


# The faulter's accesses on the C3 (kernel/src/board/esp32c3/map.rs; heartbeat's code
# and RAM come first, 8 KiB each): (announced, mcause, the kernel's name of it, address).
FAULTER_BUDGET = 40_000_000
FAULTER_ACCESSES = [
    ("reading kernel memory", 5, "load access fault", 0x3FC8_0000),
    ("writing another task's memory", 7, "store access fault", 0x3FCC_D000),
    ("reading a device register", 5, "load access fault", 0x6000_0000),  # UART0
    ("executing an illegal instruction", 2, "illegal instruction", None),
    # Its own code (0x403B_A000 on the instruction bus) seen through the data bus.
    ("writing its own code through the data bus", 7, "store access fault", 0x3FCB_A000),
    # Its own RAM (0x3FCC_F000 on the data bus) seen through the instruction bus.
    ("executing its own RAM through the instruction bus", 1, "instruction access fault", 0x403C_F000),
]
FAULTER_DONE = "faulter: done, all 6 forbidden accesses were stopped"


def check_faulter(images, work):
    """Each forbidden access is announced, trapped with its cause and address (the
    simulator's record of the exception and the kernel's report agree), the task is
    restarted for the next, and the heartbeat goes on for two beats after the last."""
    fram = os.path.join(work, "faulter-fram.img")
    if os.path.exists(fram):
        os.remove(fram)

    done_beats = []

    def until(m):
        if not done_beats and FAULTER_DONE.encode() in m.console:
            done_beats.append(m.console.count(b"[heartbeat] heartbeat"))
        return bool(done_beats) and m.console.count(b"[heartbeat] heartbeat") >= done_beats[0] + 2

    # Started as a firmware that ran on the PLL leaves the clock (a software reset),
    # with the MB85RS4MTY variant of the FRAM.
    with open(os.path.join(images, "faulter.bin"), "rb") as f:
        m, stop, seconds = boot(f.read(), fram, FAULTER_BUDGET, until, rom_on_pll=True,
                                fram_rdid=Mb85rs4mt.RDID_Y)
    text = m.console.decode(errors="replace")
    if stop is not None:
        raise SystemExit(f"faulter: the run stopped: {stop}\n{text}")
    if CLOCK_LINE_ON_PLL not in text or FRAM_LINE_Y not in text:
        raise SystemExit(f"faulter: expected {CLOCK_LINE_ON_PLL!r} and {FRAM_LINE_Y!r}:\n{text}")
    lines = [line for line in text.splitlines() if "[faulter] faulter: " in line or "task faulter: " in line]
    # Every exception the simulator delivered, in order. Store faults on a task's own
    # RAM are also the kernel's write tracking (PMP write protection), so the accesses
    # must appear in order among them, and no other fetch, illegal-instruction or load
    # fault may.
    traps = [(cause, tval) for cause, _epc, tval in m.traps if cause in (1, 2, 5, 7)]
    stray = [t for t in traps if t[0] != 7]
    if len(stray) != sum(1 for a in FAULTER_ACCESSES if a[1] != 7):
        raise SystemExit(f"faulter: unexpected fetch, illegal or load faults {stray}:\n{text}")
    pos = 0
    for i, (what, cause, name, addr) in enumerate(FAULTER_ACCESSES):
        announced, report = lines[2 * i : 2 * i + 2] if len(lines) >= 2 * i + 2 else ("", "")
        at = f" at {addr:#010x}" if addr is not None else " at 0x"
        if what not in announced or (addr is not None and not announced.endswith(at)):
            raise SystemExit(f"faulter access {i}: expected it to announce {what!r}{at}, got {announced!r}")
        if f"task faulter: {name}{at}" not in report or "task restarted" not in report:
            raise SystemExit(f"faulter access {i}: expected the kernel to report a {name}{at} and "
                             f"restart the task, got {report!r}")
        while pos < len(traps) and not (traps[pos][0] == cause and addr in (None, traps[pos][1])):
            pos += 1
        if pos == len(traps):
            raise SystemExit(f"faulter access {i}: no trap with mcause {cause}, mtval {addr} "
                             f"after the previous access's among {traps}")
        pos += 1
    if FAULTER_DONE not in text or "faulter: ERROR" in text:
        raise SystemExit(f"faulter: expected {FAULTER_DONE!r} and no 'faulter: ERROR':\n{text}")
    if not done_beats or m.console.count(b"[heartbeat] heartbeat") < done_beats[0] + 2:
        raise SystemExit(f"faulter: the heartbeat did not beat twice after the faults in "
                         f"{FAULTER_BUDGET} instructions:\n{text}")
    causes = ", ".join(f"{name} (mcause {cause})" for _, cause, name, _ in FAULTER_ACCESSES)
    print(f"c3sim check: faulter (started with the CPU on the PLL at 80 MHz, an MB85RS4MTY as "
          f"the FRAM): 6 forbidden accesses stopped and the task restarted: {causes}; "
          f"the heartbeat beat on ({m.instructions} instructions, "
          f"{m.instructions / seconds / 1e6:.2f} M per second)")


def check_ckcounter(images, work, cycles, seed):
    rng = random.Random(seed)
    fram = os.path.join(work, "ckcounter-fram.img")
    if os.path.exists(fram):
        os.remove(fram)
    with open(os.path.join(images, "ckcounter.bin"), "rb") as f:
        bin_bytes = f.read()
    last = -1
    total, seconds = 0, 0.0
    resumed = 0
    for cycle in range(cycles):
        cut = rng.randrange(2_000_000, 12_000_000)
        m, stop, s = boot(bin_bytes, fram, cut)
        total, seconds = total + m.instructions, seconds + s
        text = m.console.decode(errors="replace")
        if stop is not None:
            raise SystemExit(f"ckcounter cycle {cycle} (cut at {cut}): the run stopped: {stop}\n{text}")
        if cycle > 0 and "recovered checkpoint" in text:
            resumed += 1
        values = [int(v) for v in COMMITTED.findall(m.console)]
        for v in values:
            if v < last:
                raise SystemExit(
                    f"ckcounter cycle {cycle} (seed {seed}, cut at {cut}): printed {v} after "
                    f"{last} was committed:\n{text}"
                )
            last = max(last, v)
    if resumed < cycles // 2:
        raise SystemExit(f"ckcounter: only {resumed} of {cycles - 1} reboots recovered a checkpoint")
    print(f"c3sim check: ckcounter {cycles} crash-and-reboot cycles (seed {seed}), "
          f"{resumed} resumed from a checkpoint, the committed counter never went back "
          f"(last {last}); {total} instructions at {total / seconds / 1e6:.2f} M per second")


POWER_FAIL = re.compile(rb"power failure: checkpoint (\d+) committed")
RECOVERED = re.compile(rb"recovered checkpoint (\d+) ")


COMPARATOR_GPIO = 3  # user/apps/ckcounter-comparator.toml


def check_power_failure(images, work, seed, app="ckcounter", comparator_gpio=None):
    """The supply falls at a random instruction: the brown-out detector fires (or,
    with `comparator_gpio`, the external comparator pulls that pin low); the kernel
    commits a last checkpoint and halts; the next boot recovers exactly that
    checkpoint and counts on from the last value printed."""
    rng = random.Random(seed ^ (0xB0 if comparator_gpio is None else 0xC0))
    what = "brown-out" if comparator_gpio is None else f"comparator falling edge on GPIO{comparator_gpio}"
    fram = os.path.join(work, f"{app}-power-fail-fram.img")
    if os.path.exists(fram):
        os.remove(fram)
    with open(os.path.join(images, f"{app}.bin"), "rb") as f:
        bin_bytes = f.read()
    at = rng.randrange(3_000_000, 8_000_000)
    m = Machine(bin_bytes, fram)
    fell = []

    def poll(m):
        if m.instructions >= at and not fell:
            fell.append(m.instructions)
            if comparator_gpio is None:
                m.rtc.brown_out()
            else:
                m.gpio.drive_input(comparator_gpio, False)

    stop = m.run(30_000_000, poll)
    m.close()
    text = m.console.decode(errors="replace")
    committed = POWER_FAIL.findall(m.console)
    source = (f"power failure: a falling edge on GPIO{comparator_gpio}" if comparator_gpio is not None
              else "power failure: the brown-out detector")
    if source not in text:
        raise SystemExit(f"{app}: the board did not announce {source!r}:\n{text}")
    if stop is None or not stop.why.startswith("halted") or len(committed) != 1:
        raise SystemExit(f"{what} at {at}: expected one last checkpoint and a halt, got {stop}:\n{text}")
    last_printed = max(int(v) for v in COMMITTED.findall(m.console))
    # Until the reboot prints its first committed count (after 100 round trips and a
    # checkpoint; 3,000,000 instructions were not always enough).
    m2, stop2, _ = boot(bin_bytes, fram, 200_000_000, lambda m: COMMITTED.search(m.console))
    text2 = m2.console.decode(errors="replace")
    recovered = RECOVERED.findall(m2.console)
    after = [int(v) for v in COMMITTED.findall(m2.console)]
    if stop2 is not None or recovered != committed or not after or after[0] < last_printed:
        raise SystemExit(
            f"{what} at {at}: checkpoint {committed[0].decode()} committed, last printed "
            f"{last_printed}; the reboot recovered {recovered} and printed {after[:3]}:\n{text2}"
        )
    print(f"c3sim check: {app}: {what} at instruction {at}: checkpoint {committed[0].decode()} "
          f"committed and halted; the reboot recovered exactly it and counted on from {after[0]}")


# The heap app's clients and their progress lines (user/tasks/logger, kvstore): each
# line is a full check of the heap against the client's own state; a mismatch prints
# VIOLATION and ends the client.
HEAP_CLIENTS = [("logger", re.compile(rb"\[logger\] logger: (\d+) records")),
                ("kvstore", re.compile(rb"\[kvstore\] kv: (\d+) updates"))]
HEAP_LINES = 1  # progress lines each client prints before a run is judged
HEAP_BUDGET = 400_000_000
HEAP_FAILURES = (b"VIOLATION", b"; task ended", b"KERNEL PANIC", b"ERROR")


def heap_progress(console):
    """Each client's progress lines so far, as numbers."""
    return [[int(v) for v in pattern.findall(console)] for _, pattern in HEAP_CLIENTS]


def heap_run(bin_bytes, fram, budget, what, poll=None, lines=HEAP_LINES):
    """Boots the heap app on `fram` until each client has printed `lines` progress
    lines (or `poll` says stop); fails on a violation, an ended task, a panic or an
    error line, and on a run that stopped for any other reason than a halt."""
    def until(m):
        if poll is not None and poll(m):
            return True
        return all(len(p) >= lines for p in heap_progress(m.console))

    m = Machine(bin_bytes, fram)
    start = time.monotonic()
    stop = m.run(budget, until)
    seconds = time.monotonic() - start
    m.close()
    text = m.console.decode(errors="replace")
    bad = [f for f in HEAP_FAILURES if f in m.console]
    if bad or (stop is not None and not stop.why.startswith("halted")):
        raise SystemExit(f"heap, {what}: {bad or stop}:\n{text}")
    return m, stop, seconds, text


def check_heap(images, work, seed, cycles):
    """The heap app (SPI driver, heap service, logger and key-value clients) boots on a
    blank FRAM to its clients' first checks; the supply falls once both have checked
    zero or one time more (the seed chooses): the heap service persists and the kernel
    commits one last checkpoint and halts; the next boot recovers exactly it, the
    service reloads the heaps and both clients check them against their own state and
    go on. Then `cycles` runs cut at a random instruction, each on the FRAM the last
    left, and one more boot, which recovers and checks."""
    rng = random.Random(seed ^ 0xEA)
    fram = os.path.join(work, "heap-fram.img")
    with open(os.path.join(images, "heap.bin"), "rb") as f:
        bin_bytes = f.read()
    total, seconds = 0, 0.0
    extra = rng.randrange(0, 2)
    booted, fell = [], []

    def brown_out(m):
        lines = [len(p) for p in heap_progress(m.console)]
        if not booted and min(lines) >= 1:
            booted.append(m.instructions)
        if not fell and min(lines) >= 1 + extra:
            fell.append(m.instructions)
            m.rtc.brown_out()
        return False

    if os.path.exists(fram):
        os.remove(fram)
    m, stop, s, text = heap_run(bin_bytes, fram, HEAP_BUDGET, "first boot and brown-out", brown_out,
                                lines=1 << 30)
    total, seconds = total + m.instructions, seconds + s
    committed = POWER_FAIL.findall(m.console)
    if ("fresh start: app heap booted" not in text or not fell or stop is None
            or "power failure: persist callbacks took" not in text or len(committed) != 1):
        raise SystemExit(f"heap: expected a fresh start, the clients' checks, a brown-out, the "
                         f"heap service's persist, one last checkpoint and a halt, got {stop}:\n{text}")
    before = [p[-1] for p in heap_progress(m.console)]
    m = Machine(bin_bytes, fram)
    start = time.monotonic()
    stop = m.run(HEAP_BUDGET, lambda m: b"checkpoints: every" in m.console
                 and all(heap_progress(m.console)))
    total, seconds = total + m.instructions, seconds + time.monotonic() - start
    m.close()
    text = m.console.decode(errors="replace")
    recovered = RECOVERED.findall(m.console)
    if recovered != committed or stop is not None:
        raise SystemExit(f"heap: checkpoint {committed[0].decode()} committed at the brown-out; the "
                         f"reboot recovered {recovered} and stopped with {stop}:\n{text}")
    after = [p[-1] if p else -1 for p in heap_progress(m.console)]
    if (b"VIOLATION" in m.console or "heapsvc: reloaded after restore" not in text
            or not all(a > b for a, b in zip(after, before))):
        raise SystemExit(f"heap: after the brown-out's checkpoint (clients at {before}) the "
                         f"clients went to {after}:\n{text}")
    resume = (f"a brown-out at instruction {fell[0]} (clients at {before[0]} records and "
              f"{before[1]} updates): the heap service persisted, checkpoint "
              f"{committed[0].decode()} committed and the kernel halted; the reboot recovered "
              f"exactly it, and the clients checked their heaps and went on to {after[0]} "
              f"records and {after[1]} updates")

    if os.path.exists(fram):
        os.remove(fram)
    resumed = 0
    for cycle in range(cycles):
        cut = rng.randrange(booted[0] // 2, 2 * booted[0])
        m, stop, s, text = heap_run(bin_bytes, fram, cut,
                                    f"crash cycle {cycle} (seed {seed}, cut at {cut})", lines=1 << 30)
        total, seconds = total + m.instructions, seconds + s
        resumed += "recovered checkpoint" in text
    m, stop, s, text = heap_run(bin_bytes, fram, HEAP_BUDGET, f"after {cycles} crash cycles (seed {seed})")
    total, seconds = total + m.instructions, seconds + s
    if "recovered checkpoint" not in text or stop is not None:
        raise SystemExit(f"heap: after {cycles} crash cycles the boot did not recover and check:\n{text}")
    print(f"c3sim check: heap booted on a blank FRAM to both clients' first checks in {booted[0]} "
          f"instructions; {resume}; {cycles} crash-and-reboot cycles (seed {seed}), {resumed} "
          f"resumed from a checkpoint, and a last boot recovered and checked: no client found its "
          f"heap inconsistent; {total} instructions at {total / seconds / 1e6:.2f} M per second")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="c3sim.check", description=__doc__)
    ap.add_argument("--images", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cycles", type=int, default=30)
    ap.add_argument("--heap-cycles", type=int, default=3)
    ap.add_argument("--only", choices=["heap"], default=None)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args(argv)
    os.makedirs(args.work, exist_ok=True)
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    if args.only == "heap":
        check_heap(args.images, args.work, seed, args.heap_cycles)
        return 0
    check_demo(args.images, args.work)
    check_faulter(args.images, args.work)
    check_power_failure(args.images, args.work, seed)
    check_power_failure(args.images, args.work, seed, "ckcounter-comparator", COMPARATOR_GPIO)
    check_ckcounter(args.images, args.work, args.cycles, seed)
    check_heap(args.images, args.work, seed, args.heap_cycles)
    return 0


if __name__ == "__main__":
    sys.exit(main())
