#!/bin/sh
# Where the instructions of one warm IPC round trip of the bench app go.
# Usage: tools/ipc-profile/profile.sh [64|buf|4]   (64: the 64-byte round trip through
# descriptors, the default; buf: the same through IPC buffers; 4: the register-only
# one). Needs qemu-system-riscv32, gdb-multiarch and LLVM's llvm-symbolizer and
# llvm-nm; builds the bench app first. It boots its own QEMU (-icount, halted, gdb stub
# on PORT, default 1234) on a scratch NVM image and stops it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
kind=${1:-64}
case $kind in 64) msg=desc ;; buf) msg=buf ;; 4) msg=none ;; *) echo "usage: $0 [64|buf|4]" >&2; exit 2 ;; esac
cd "$root"
cargo xtask build bench >/dev/null 2>&1
elf=$root/target/amber/apps/bench.elf
entry=0x$(llvm-nm "$elf" | grep 'trap5entry' | cut -d' ' -f1)
work=$(mktemp -d)
trap 'kill $qemu 2>/dev/null || true; rm -rf "$work"' EXIT
truncate -s 4194304 "$work/nvm.img"
qemu-system-riscv32 -machine virt -cpu rv32,a=false,f=false,d=false,h=false -smp 1 \
    -m 128M -bios none -no-reboot -nographic -kernel "$elf" \
    -append "amber.format amber.icount" \
    -object memory-backend-file,id=nvm,mem-path="$work/nvm.img",size=4194304,share=on \
    -device ivshmem-plain,memdev=nvm -icount shift=0,sleep=off \
    -gdb tcp::"${PORT:-1234}" -S >"$work/qemu.log" 2>&1 &
qemu=$!
sleep 1
ENTRY=$entry MSG=$msg OUT="$work/pcs" PORT=${PORT:-1234} \
    gdb-multiarch -batch -x "$here/trace.py" "$elf" 2>/dev/null | grep '^traced'
python3 "$here/categorize.py" "$elf" "$work/pcs"
