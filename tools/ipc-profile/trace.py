"""Single-steps one warm IPC round trip of the bench app under QEMU's gdb stub.

Run by profile.sh inside gdb-multiarch (`gdb -batch -x trace.py`), never on its own.
It stops at the trap entry when the client's `Call` (a7 = 5) traps with the `a5` MSG
asks for (`desc`: a descriptor, `buf`: the IPC buffer, `none`: neither), lets SKIP such
calls pass so that the measured one is warm, masks the timer in `mie` while it steps,
and writes the pc of every instruction up to the one after that `ecall` to OUT. `ecall`
and `mret` are crossed by breakpoints at the trap entry and at `mepc`, since a single
step does not follow them. It only reads the guest; it must never change anything but
`mie`, which it restores.
"""
import os

import gdb

ENTRY = int(os.environ["ENTRY"], 16)
SKIP = int(os.environ.get("SKIP", "20"))
MSG = os.environ.get("MSG", "desc")
OUT = os.environ["OUT"]
PORT = os.environ.get("PORT", "1234")
LIMIT = 20000
ECALL, MRET = 0x00000073, 0x30200073


def reg(name):
    return int(gdb.parse_and_eval(f"${name}")) & 0xFFFFFFFF


def word(inferior, pc):
    return int.from_bytes(bytes(inferior.read_memory(pc, 4)), "little")


def main():
    gdb.execute("set pagination off")
    gdb.execute("set confirm off")
    gdb.execute(f"target remote :{PORT}")
    a5 = {
        "desc": "$a5 != 0 && (unsigned) $a5 < 0xFFFFF000",
        "buf": "(unsigned) $a5 >= 0xFFFFF000",
        "none": "$a5 == 0",
    }[MSG]
    cond = f"$a7 == 5 && {a5}"
    gdb.execute(f"break *{ENTRY:#x} if {cond}")
    gdb.execute(f"ignore 1 {SKIP}")
    gdb.execute("continue")
    gdb.execute("delete")
    done_at = reg("mepc") + 4
    mie = reg("mie")
    gdb.execute("set $mie = 0")
    inferior = gdb.selected_inferior()
    pcs = []
    pc = reg("pc")
    while pc != done_at and len(pcs) < LIMIT:
        pcs.append(pc)
        w = word(inferior, pc)
        if w == MRET:
            gdb.execute(f"tbreak *{reg('mepc'):#x}", to_string=True)
            gdb.execute("continue", to_string=True)
        elif w == ECALL:
            gdb.execute(f"tbreak *{ENTRY:#x}", to_string=True)
            gdb.execute("continue", to_string=True)
        else:
            gdb.execute("stepi", to_string=True)
        pc = reg("pc")
    gdb.execute(f"set $mie = {mie}")
    with open(OUT, "w") as f:
        f.writelines(f"{p:08x}\n" for p in pcs)
    print(f"traced {len(pcs)} instructions" + (" (stopped at the limit)" if pc != done_at else ""))
    gdb.execute("kill")


main()
