"""`python -m c3sim IMAGE.bin --fram FILE`: boots the image with the console on the
terminal (a key goes to UART0's RX FIFO; Ctrl-B drops the supply below the brown-out
threshold, or, with --comparator-gpio N, has the external comparator pull GPIO N low), and prints the instructions run and their rate when the run ends. Exit
status 0 when the budget ran out or the guest halted, 1 when the run was stopped by
an error (undecoded access, watchdog, image refused). Never changes the image.
"""

import argparse
import os
import select
import sys
import termios
import time
import tty

from . import image
from .machine import Machine, Stop

BROWN_OUT_KEY = 0x02  # Ctrl-B


def main(argv=None):
    ap = argparse.ArgumentParser(prog="c3sim", description=__doc__)
    ap.add_argument("image")
    ap.add_argument("--fram", required=True, help="the MB85RS4MT's array (512 KiB; created erased)")
    ap.add_argument("--instructions", type=int, default=None,
                    help="stop after this many instructions (default: run until it halts)")
    ap.add_argument("--brown-out-at", type=int, default=None,
                    help="the supply falls below the brown-out threshold at this instruction")
    ap.add_argument("--comparator-gpio", type=int, default=None,
                    help="the supply's fall is a falling edge on this GPIO (an app's [esp32c3] "
                         "power_failure_gpio), not the brown-out detector")
    ap.add_argument("--pins", default=None,
                    help="the FRAM's wiring as SCK,MISO,MOSI,CS (an app's [esp32c3] pins; "
                         "default: the paper's board, 6,2,7,1)")
    ap.add_argument("--interactive", action="store_true", help="read console input from the terminal")
    args = ap.parse_args(argv)

    out = sys.stdout.buffer

    def console(b):
        out.write(bytes([b]))
        if b == 10:
            out.flush()

    try:
        pins = tuple(int(p) for p in args.pins.split(",")) if args.pins else None
        if pins is not None and len(pins) != 4:
            raise ValueError(f"--pins {args.pins}: four GPIO numbers, SCK,MISO,MOSI,CS")
        with open(args.image, "rb") as f:
            m = Machine(f.read(), args.fram, console, **({"pins": pins} if pins else {}))
    except (image.ImageError, Stop, OSError, ValueError) as e:
        print(f"c3sim: {args.image}: {e}", file=sys.stderr)
        return 1
    m.uart_input_possible = args.interactive
    browned = [False]

    def supply_falls(m):
        if args.comparator_gpio is None:
            m.rtc.brown_out()
        else:
            m.gpio.drive_input(args.comparator_gpio, False)

    def poll(m):
        if args.brown_out_at is not None and not browned[0] and m.instructions >= args.brown_out_at:
            browned[0] = True
            supply_falls(m)
        if args.interactive and select.select([sys.stdin], [], [], 0)[0]:
            data = os.read(sys.stdin.fileno(), 64)
            if BROWN_OUT_KEY in data:
                supply_falls(m)
            m.uart.feed(data.replace(bytes([BROWN_OUT_KEY]), b""))

    budget = args.instructions if args.instructions is not None else 1 << 62
    saved = None
    if args.interactive and sys.stdin.isatty():
        saved = termios.tcgetattr(sys.stdin)
        tty.setcbreak(sys.stdin)  # keys at once; Ctrl-C still quits
    start = time.monotonic()
    try:
        stop = m.run(budget, poll)
    except KeyboardInterrupt:
        stop = Stop("halted: quit from the terminal (Ctrl-C)")
    finally:
        if saved is not None:
            termios.tcsetattr(sys.stdin, termios.TCSADRAIN, saved)
    seconds = max(time.monotonic() - start, 1e-9)
    out.flush()
    m.close()
    rate = m.instructions / seconds
    bound = "" if m.count_exact else "at most "
    print(
        f"c3sim: {bound}{m.instructions} instructions in {seconds:.2f} s host time "
        f"({rate / 1e6:.2f} M instructions per second), {m.interrupts} interrupts, "
        f"{len(m.traps)} exceptions, {m.spi.transactions} SPI transactions; CPU clock at the end "
        f"{m.system.cpu_hz() // 1_000_000} MHz, {m.timebase.seconds():.3f} simulated seconds",
        file=sys.stderr,
    )
    if stop is None:
        print(f"c3sim: stopped after the budget of {budget} instructions", file=sys.stderr)
        return 0
    print(f"c3sim: {stop}", file=sys.stderr)
    return 0 if stop.why.startswith("halted") else 1


if __name__ == "__main__":
    sys.exit(main())
