"""Sorts the pcs trace.py wrote into the parts of the IPC path, by each pc's inlined
function chain (llvm-symbolizer) or, where the debug info names none, by the symbol
that holds it. Usage: categorize.py ELF PCS. It only reads its inputs."""
import bisect
import collections
import json
import subprocess
import sys

# First match wins: a pc counts for the first part whose keys name a function of its
# chain (innermost first).
PARTS = [
    ("user code", ["USER"]),
    ("trap entry and _resume_user (assembly)", ["trap5entry", "trap::entry", "_resume_user", "pcrel_hi"]),
    ("dirty-page marks (the receiver's task found once, Pages::touched)",
     ["mark_with", "touched", "task_memory::pages", "TaskMemory::mark"]),
    ("the bytes: copies (word loop)", ["copy_forward", "copy_words"]),
    ("UserMemory::deliver: the call, its checks, the result words", ["deliver", "FastMemory"]),
    ("descriptor reads and checks, buffer checks against own regions",
     ["fast_own_part", "fast_recv_part", "fast_desc", "own_region", "read_desc_words"]),
    ("move_bytes: lengths, where the result words go", ["move_bytes"]),
    ("hand-over: both threads' states and results, ready index", ["hand_over", "write_results"]),
    ("PMP switch", ["pmp", "switch_pmp", "set_pmp"]),
    ("the partner: waiting, runs next", ["oldest_blocked", "none_ready_up_to", "any_sender"]),
    ("endpoint capability lookup", ["endpoint_cap"]),
]
REST = "the rest: arguments, thread records, checks, frames (fast_ipc_of, fast_ipc)"


def main():
    elf, trace = sys.argv[1], sys.argv[2]
    pcs = [int(line, 16) for line in open(trace)]
    uniq = sorted(set(pcs))
    out = subprocess.run(
        ["llvm-symbolizer", "--inlining", "--demangle", "--output-style=JSON", "-e", elf],
        input="\n".join(hex(p) for p in uniq), capture_output=True, text=True, check=True,
    ).stdout
    syms = []
    nm = subprocess.run(["llvm-nm", "--defined-only", elf], capture_output=True, text=True,
                        check=True).stdout
    for line in nm.splitlines():
        addr, kind, name = line.split(" ", 2)
        if kind in "tTwW" and not name.startswith("."):
            syms.append((int(addr, 16), name))
    syms.sort()
    starts = [a for a, _ in syms]
    # The tasks' segments are the image's `.amber_task.N` sections; any pc from the
    # lowest of them up is user code.
    heads = subprocess.run(["llvm-objdump", "-h", elf], capture_output=True, text=True,
                           check=True).stdout
    tasks_base = min(int(f[3], 16) for f in (line.split() for line in heads.splitlines())
                     if len(f) > 2 and f[1].startswith(".amber_task."))
    chain = {}
    for p, line in zip(uniq, out.strip().split("\n")):
        frames = json.loads(line).get("Symbol", [])
        names = [f["FunctionName"] for f in frames if f["FunctionName"].strip() not in ("", ".L0")]
        if p >= tasks_base:
            names = ["USER"]
        elif not names:
            names = [syms[bisect.bisect_right(starts, p) - 1][1]]
        chain[p] = " | ".join(names)
    counts = collections.Counter()
    for p in pcs:
        part = next((name for name, keys in PARTS if any(k in chain[p] for k in keys)), REST)
        counts[part] += 1
    for name, n in counts.most_common():
        print(f"{n:6d}  {name}")
    print(f"{len(pcs):6d}  in all")


main()
