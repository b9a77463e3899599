"""The simulated ESP32-C3: unicorn's RV32 CPU (M- and U-mode, PMP), SRAM1 mapped once
and shown at both its data-bus (0x3FC8_0000) and instruction-bus (0x4038_0000)
addresses, the peripheral models of periph.py at their TRM addresses, the ROM
functions the board calls (each a `ret` in a mapped ROM, its effect done here: `ROM`;
a call of any other ROM address stops the run), and the trap
entry unicorn leaves to its host: for every exception (UC_HOOK_INTR) and for every
interrupt the matrix raises, this file sets PRIV to 3 first, then mepc, mcause, mtval,
mstatus (MPP, MPIE, MIE), then the pc (mtvec's base; + 4·line for an interrupt in
vectored mode). The CSRs the C3 adds (PCER/PCMR/PCCR, 0x7E0..0x7E2) are emulated here.
Unicorn's QEMU checks PMP only when it fills a TLB entry (pmp.py): a shadow of the
kernel's PMP writes says which U-mode stores to hook and make the access faults they
are on the chip.

Time is instructions: the CPU runs in slices of an exact instruction count (unicorn's
`count`), one instruction is one cycle of the CPU clock SYSTEM's registers select (80
MHz as the ROM leaves it, 160 MHz once the board switches; periph.Timebase keeps
SYSTIMER at 16 MHz across the change), and a `wfi` with nothing pending skips the
clock to the next alarm. Never models anything it cannot name: an access to
an undecoded address stops the run with the address and the pc (Stop).
"""

import ctypes
import mmap
import os

from unicorn import (
    UC_ARCH_RISCV,
    UC_CTL_IO_WRITE,
    UC_CTL_TLB_FLUSH,
    UC_HOOK_BLOCK,
    UC_HOOK_CODE,
    UC_HOOK_INTR,
    UC_HOOK_MEM_FETCH_UNMAPPED,
    UC_HOOK_MEM_READ,
    UC_HOOK_MEM_READ_UNMAPPED,
    UC_HOOK_MEM_WRITE,
    UC_HOOK_MEM_WRITE_UNMAPPED,
    UC_MODE_RISCV32,
    UC_PROT_ALL,
    UC_PROT_EXEC,
    UC_PROT_READ,
    Uc,
    UcError,
)
from unicorn import riscv_const as R

from . import image, periph, pmp

SRAM_DATA_BASE = 0x3FC8_0000
SRAM_BYTES = 384 * 1024
IRAM_ALIAS = 0x0070_0000
WFI = 0x1050_0073
MRET = 0x3020_0073
MSTATUS_MIE, MSTATUS_MPIE = 1 << 3, 1 << 7
MPP_SHIFT = 11
CAUSE_ILLEGAL = 2
CAUSE_ECALL_FROM_U = 8
# The C3's performance counter CSRs (event select, mode, count).
PCER, PCMR, PCCR = 0x7E0, 0x7E1, 0x7E2
SLICE = 20_000
UNICORN_EXCEPTION_PC_OFFSET = 4
# The C3's instruction ROM (esp-idf `soc/esp32c3/include/soc/soc.h`: 0x4000_0000 ..
# 0x4006_0000), and the functions of it the board calls (esp-idf
# `components/esp_hal_regi2c/esp32c3/rom.regi2c.ld`, esp-hal `esp32c3.rom.ld`).
IROM_BASE, IROM_BYTES = 0x4000_0000, 0x6_0000
ROM = {0x4000_195C: "rom_i2c_writeReg", 0x4000_1960: "rom_i2c_writeReg_Mask"}
C_JR_RA = b"\x82\x80"


# CSRs the ESP32-C3 does not have (it has no mie/mip: the interrupt matrix masks),
# and the instruction classes outside RV32IMC.
ABSENT_CSRS = {0x304: "mie", 0x344: "mip", 0xB02: "minstret", 0xB82: "minstreth",
               0xC02: "instret", 0xC82: "instreth"}
FP_OPCODES = {0x07, 0x27, 0x43, 0x47, 0x4B, 0x4F, 0x53}


def outside_rv32imc(word):
    """What the C3 lacks that the instruction `word` (its low 32 bits; a compressed
    instruction in the low half) uses, or None."""
    if word & 3 != 3:
        half = word & 0xFFFF
        quadrant, funct3 = half & 3, half >> 13
        if quadrant in (0, 2) and funct3 & 1 and half:
            return "a compressed floating-point load or store (no F/D extension)"
        return None
    op = word & 0x7F
    if op == 0x2F:
        return "an atomic (A extension)"
    if op in FP_OPCODES:
        return "a floating-point instruction (no F/D extension)"
    if op == 0x73 and (word >> 12) & 7 not in (0, 4):
        csr = word >> 20
        if csr in ABSENT_CSRS:
            return f"CSR {ABSENT_CSRS[csr]} ({csr:#x}), which the ESP32-C3 does not have"
    return None


def first_outside_rv32imc(addr, body):
    """(address, what, instruction) of the first instruction of `body` (code at
    `addr`, decoded from its start) outside RV32IMC, or None."""
    body = bytes(body) + b"\0\0"
    off = 0
    while off < len(body) - 2:
        word = int.from_bytes(body[off : off + 4], "little")
        why = outside_rv32imc(word)
        if why:
            return addr + off, why, word if word & 3 == 3 else word & 0xFFFF
        off += 4 if word & 3 == 3 else 2
    return None


def csr_sites(addr, body, wanted):
    """Addresses of the CSR instructions of `body` (code at `addr`, decoded from its
    start) whose CSR number `wanted` accepts (csrrw/csrrs/csrrc, immediate forms too)."""
    body = bytes(body) + b"\0\0"
    found, off = [], 0
    while off < len(body) - 2:
        word = int.from_bytes(body[off : off + 4], "little")
        if word & 3 != 3:
            off += 2
            continue
        if word & 0x7F == 0x73 and (word >> 12) & 7 not in (0, 4) and wanted(word >> 20):
            found.append(addr + off)
        off += 4
    return found


def csr_result(insn, old, reg):
    """The value the CSR instruction `insn` leaves in its CSR, from the CSR's `old` value
    (`reg(n)` reads x[n]); None when it only reads (csrrs/csrrc with x0 or zimm 0)."""
    funct3, rs1 = (insn >> 12) & 7, (insn >> 15) & 0x1F
    src = rs1 if funct3 >= 5 else reg(rs1)
    op = funct3 & 3
    if op != 1 and rs1 == 0:
        return None
    return src if op == 1 else (old | src if op == 2 else old & ~src)


class Stop(Exception):
    """The run ended: why, and at which pc."""

    def __init__(self, why, pc=None):
        where = f" (pc {pc:#010x})" if pc is not None else ""
        super().__init__(why + where)
        self.why, self.pc = why, pc


class Machine:
    def __init__(self, bin_bytes, fram_path, console=None, rom_on_pll=False,
                 pins=periph.PAPER_PINS, fram_rdid=periph.Mb85rs4mt.RDID, leftovers=True):
        entry, segments = image.parse(bin_bytes)
        self.entry = entry
        self.console_out = console or (lambda b: None)
        self.console = bytearray()
        self.instructions = 0
        self.idle_cycles = 0
        self.traps = []  # (mcause, mepc, mtval) of every exception delivered
        self.interrupts = 0
        self.interrupts_on_line = [0] * 32
        self.stop = None
        self.count_exact = True

        self.uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV32)
        self._sram = ctypes.create_string_buffer(SRAM_BYTES)
        ptr = ctypes.addressof(self._sram)
        self.uc.mem_map_ptr(SRAM_DATA_BASE, SRAM_BYTES, UC_PROT_ALL, ptr)
        self.uc.mem_map_ptr(SRAM_DATA_BASE + IRAM_ALIAS, SRAM_BYTES, UC_PROT_ALL, ptr)
        for addr, body in segments:
            self.uc.mem_write(self._physical(addr, len(body)), body)

        self.fram_file = open(fram_path, "r+b") if os.path.exists(fram_path) else None
        if self.fram_file is None:
            with open(fram_path, "wb") as f:
                f.write(b"\xff" * periph.Mb85rs4mt.SIZE)
            self.fram_file = open(fram_path, "r+b")
        size = os.fstat(self.fram_file.fileno()).st_size
        if size != periph.Mb85rs4mt.SIZE:
            raise Stop(f"FRAM file {fram_path} is {size} bytes, an MB85RS4MT holds {periph.Mb85rs4mt.SIZE}")
        self.fram_map = mmap.mmap(self.fram_file.fileno(), size)

        self.rtc = periph.RtcCntl()
        self.ana = periph.AnaMaster()
        self.analog = periph.Analog(self.ana.bbpll_master_on, configured=rom_on_pll)
        self.system = periph.system(None, rom_on_pll, self.rtc, self.ana, self.analog)
        self.timebase = periph.Timebase(self.cycles, self.system.cpu_hz())
        self.system.timebase = self.timebase
        self.uart = periph.Uart0(self._out, self.system.apb_hz)
        self.timg = [periph.TimerGroup(0), periph.TimerGroup(1)]
        self.systimer = periph.Systimer(self.timebase)
        self.intmatrix = periph.IntMatrix()
        # Planted to check the board's clean-up (what the ROM leaves is not known): the
        # USB-Serial-JTAG source mapped to line 5, enabled, and raised (_pending_line),
        # and UART0's TXFIFO_EMPTY interrupt enabled (periph.Uart0).
        self.leftovers = leftovers
        if leftovers:
            self.intmatrix.map[self.STRAY_SOURCE] = self.STRAY_LINE
            self.intmatrix.enable |= 1 << self.STRAY_LINE
            self.intmatrix.priority[self.STRAY_LINE] = 1
        else:
            self.uart.int_ena = 0
        self.io_mux = periph.io_mux()
        self.gpio = periph.Gpio(self.io_mux)
        self.fram = periph.Mb85rs4mt(self.fram_map, fram_rdid)
        self.spi = periph.Spi2(self.gpio, self.system, self.fram, pins)
        self.devices = [self.uart, self.rtc, self.ana, *self.timg, self.systimer, self.intmatrix,
                        self.gpio, self.io_mux, self.system, self.spi]
        for dev in self.devices:
            self.uc.mmio_map(dev.base, dev.size, self._mmio_read, dev, self._mmio_write, dev)

        rom = bytearray(IROM_BYTES)
        for addr in ROM:
            rom[addr - IROM_BASE : addr - IROM_BASE + 2] = C_JR_RA
        self.uc.mem_map(IROM_BASE, IROM_BYTES, UC_PROT_READ | UC_PROT_EXEC)
        self.uc.mem_write(IROM_BASE, bytes(rom))
        self.uc.hook_add(UC_HOOK_BLOCK, self._on_rom, None, IROM_BASE, IROM_BASE + IROM_BYTES - 1)
        self.rom_calls = {name: 0 for name in ROM.values()}
        self.uc.hook_add(UC_HOOK_INTR, self._on_exception)
        self.uc.hook_add(
            UC_HOOK_MEM_READ_UNMAPPED | UC_HOOK_MEM_WRITE_UNMAPPED | UC_HOOK_MEM_FETCH_UNMAPPED,
            self._on_unmapped,
        )
        # The kernel's code is the instruction-bus segment the entry lies in; the
        # others there are the tasks' code, which the image carries too.
        code = [(a, b) for a, b in segments if a >= SRAM_DATA_BASE + IRAM_ALIAS]
        kernel = [(a, b) for a, b in code if a <= entry < a + len(b)]
        tasks = [(a, b) for a, b in code if (a, b) not in kernel]
        for addr in self._addresses_of(WFI, kernel):
            self.uc.hook_add(UC_HOOK_CODE, self._on_wfi, None, addr, addr)
        for addr in self._addresses_of(MRET, kernel):
            self.uc.hook_add(UC_HOOK_CODE, self._on_mret, None, addr, addr)
        # PMP as unicorn misses it (pmp.py): the kernel's PMP writes are copied into a
        # shadow, and at each mret to U-mode the stores the shadow denies near pages
        # U-mode can reach are hooked.
        self.pmp = pmp.ShadowPmp()
        self._guarded_pmp = None
        self._guards_for = {}  # PMP state -> (ranges to guard, U-writable ranges)
        self._store_guards = {}  # (lo, hi) -> hook
        self._retired_callbacks = []
        # A caught store until its fault is entered: (pc, [(address, bytes before)]).
        self._pending_store = None
        self.caught_stores = 0
        for addr, body in kernel:
            for site in csr_sites(addr, body, pmp.is_pmp_csr):
                insn = int.from_bytes(body[site - addr : site - addr + 4], "little")
                self.uc.hook_add(UC_HOOK_CODE, self._on_pmp_csr, insn, site, site)
        # The kernel's code is checked where it lies, in one linear sweep (Rust puts no
        # data in .text); the tasks' code block by block as it first runs (a task may
        # carry code for other boards that it never runs here).
        for addr, body in kernel:
            bad = first_outside_rv32imc(addr, body)
            if bad:
                raise Stop(f"kernel code: {bad[1]} (instruction {bad[2]:#x})", bad[0])
        self._checked_blocks = set()
        if tasks:
            start = min(a for a, _ in tasks)
            end = max(a + len(b) for a, b in tasks)
            self.uc.hook_add(UC_HOOK_BLOCK, self._on_task_block, None, start, end - 1)
        # Data loads through the instruction bus: the chip serves only aligned words
        # there (esp-idf's "Memory Types": instruction memory "can only be read or
        # written via 4-byte aligned words"; esptool lists the range without
        # BYTE_ACCESSIBLE), so any other load stops the run; aligned words are counted.
        self.ibus_word_loads = 0
        self.uc.hook_add(UC_HOOK_MEM_READ, self._on_ibus_load, None,
                         SRAM_DATA_BASE + IRAM_ALIAS, SRAM_DATA_BASE + IRAM_ALIAS + SRAM_BYTES - 1)
        self.uc.reg_write(R.UC_RISCV_REG_PC, entry)
        self.pccr_base = 0
        self.pcmr = 0

    # --- memory -----------------------------------------------------------------

    def _physical(self, addr, length):
        for base in (SRAM_DATA_BASE, SRAM_DATA_BASE + IRAM_ALIAS):
            if base <= addr and addr + length <= base + SRAM_BYTES:
                return addr
        raise image.ImageError(f"segment at {addr:#010x} ({length} bytes) is not in SRAM1")

    def _addresses_of(self, insn, segments):
        """Every halfword-aligned `insn` in the code segments (instruction bus)."""
        found = []
        for addr, body in segments:
            if addr < SRAM_DATA_BASE + IRAM_ALIAS:
                continue
            for off in range(0, len(body) - 3, 2):
                if int.from_bytes(body[off : off + 4], "little") == insn:
                    found.append(addr + off)
        return found

    # The planted interrupt-matrix leftover (source 26 is USB_SERIAL_JTAG).
    STRAY_SOURCE, STRAY_LINE = 26, 5

    def cycles(self):
        return self.instructions + self.idle_cycles

    def _on_rom(self, uc, addr, size, _data):
        """A call into the ROM: the modelled functions' effect (a0..a5 are their
        arguments), any other stops the run."""
        name = ROM.get(addr)
        if name is None:
            self._fail(f"a call of the ROM at {addr:#010x}, which the simulator does not model")
            return
        a = [self._x(10 + i) & 0xFF for i in range(6)]
        try:
            if name == "rom_i2c_writeReg":
                self.analog.write_mask(a[0], a[1], a[2], 7, 0, a[3])
            elif name == "rom_i2c_writeReg_Mask":
                self.analog.write_mask(a[0], a[1], a[2], a[3], a[4], a[5])
        except periph.ClockRefused as e:
            self._fail(str(e))
            return
        self.rom_calls[name] += 1

    def _out(self, byte):
        self.console.append(byte)
        self.console_out(byte)

    def _pc(self):
        return self.uc.reg_read(R.UC_RISCV_REG_PC)

    def _mmio_read(self, uc, offset, size, dev):
        try:
            if size != 4 or offset % 4:
                raise periph.Undecoded(dev.base + offset, f"{size}-byte read of {dev.name}")
            return dev.read(offset)
        except Exception as e:  # noqa: BLE001 - every model error stops the run
            self._fail(str(e))
            return 0

    def _mmio_write(self, uc, offset, size, value, dev):
        try:
            if size != 4 or offset % 4:
                raise periph.Undecoded(dev.base + offset, f"{size}-byte write of {dev.name}")
            dev.write(offset, value)
            if dev is self.gpio:
                self.spi.chip_select_changed()
        except Exception as e:  # noqa: BLE001
            self._fail(str(e))

    def _x(self, n):
        return self.uc.reg_read(R.UC_RISCV_REG_X0 + n) if n else 0

    def _fail(self, why):
        if self.stop is None:
            self.stop = Stop(why, self._pc())
        self.uc.emu_stop()

    def _on_ibus_load(self, uc, access, addr, size, value, _data):
        if size != 4 or addr % 4:
            self._fail(f"{size}-byte load at {addr:#010x} through the instruction bus, "
                       f"which serves only aligned words")
        else:
            self.ibus_word_loads += 1

    def _on_unmapped(self, uc, access, addr, size, value, _data):
        kind = {19: "read", 20: "write", 21: "fetch"}.get(access, f"access {access}")
        self._fail(f"{size}-byte {kind} at {addr:#010x}, which the ESP32-C3 does not decode")
        return False

    # --- traps --------------------------------------------------------------------

    def _enter_trap(self, cause, epc, tval, interrupt_line=None, after_mret=False):
        """`after_mret`: the trap is taken at the first instruction after an mret
        (which has not run): the privilege and MIE it would have restored become MPP
        and MPIE."""
        uc = self.uc
        # Unicorn's QEMU does not flush its TLB when pmpcfg/pmpaddr change, so U-mode
        # would keep the permissions it had before the kernel changed the PMP (a
        # write-protected page would stay writable, unseen by dirty tracking). The
        # kernel changes the PMP only between a trap and its mret: flushing at every
        # trap entry makes U-mode see the PMP the kernel leaves.
        uc.ctl(UC_CTL_TLB_FLUSH, UC_CTL_IO_WRITE)
        prev = uc.reg_read(R.UC_RISCV_REG_PRIV)
        ms = uc.reg_read(R.UC_RISCV_REG_MSTATUS)
        mie = 1 if ms & MSTATUS_MIE else 0
        if after_mret:
            prev, mie = (ms >> MPP_SHIFT) & 3, 1 if ms & MSTATUS_MPIE else 0
        uc.reg_write(R.UC_RISCV_REG_PRIV, 3)
        uc.reg_write(R.UC_RISCV_REG_MEPC, epc)
        uc.reg_write(R.UC_RISCV_REG_MCAUSE, cause)
        uc.reg_write(R.UC_RISCV_REG_MTVAL, tval)
        ms = (ms & ~(MSTATUS_MIE | MSTATUS_MPIE | (3 << MPP_SHIFT))) | (mie << 7) | ((prev & 3) << MPP_SHIFT)
        uc.reg_write(R.UC_RISCV_REG_MSTATUS, ms)
        mtvec = uc.reg_read(R.UC_RISCV_REG_MTVEC)
        base = mtvec & ~3
        target = base + 4 * interrupt_line if interrupt_line is not None and mtvec & 3 == 1 else base
        uc.reg_write(R.UC_RISCV_REG_PC, target)

    def _fault_address(self, pc, cause):
        """mtval for an access fault: the address the faulting load or store used
        (decoded from its instruction), or the pc for a fetch."""
        if cause == 1:
            return pc
        try:
            insn = int.from_bytes(self.uc.mem_read(pc, 4), "little")
        except UcError:
            return 0
        reg = self._x
        if insn & 3 == 3:
            op = insn & 0x7F
            if op == 0x03:
                imm = insn >> 20
            elif op == 0x23:
                imm = ((insn >> 25) << 5) | ((insn >> 7) & 0x1F)
            else:
                return 0
            imm = imm - 4096 if imm & 0x800 else imm
            return (reg((insn >> 15) & 0x1F) + imm) & 0xFFFF_FFFF
        half = insn & 0xFFFF
        quadrant, funct3 = half & 3, half >> 13
        if quadrant == 0 and funct3 in (2, 6):  # c.lw, c.sw
            off = ((half >> 6) & 1) << 2 | ((half >> 10) & 7) << 3 | ((half >> 5) & 1) << 6
            return (reg(8 + ((half >> 7) & 7)) + off) & 0xFFFF_FFFF
        if quadrant == 2 and funct3 == 2:  # c.lwsp
            off = ((half >> 4) & 7) << 2 | ((half >> 12) & 1) << 5 | ((half >> 2) & 3) << 6
            return (reg(2) + off) & 0xFFFF_FFFF
        if quadrant == 2 and funct3 == 6:  # c.swsp
            off = ((half >> 9) & 0xF) << 2 | ((half >> 7) & 3) << 6
            return (reg(2) + off) & 0xFFFF_FFFF
        return 0

    def _on_exception(self, uc, intno, _data):
        # Unicorn 2.1 reports the pc 4 bytes past the instruction that trapped, for
        # 2- and 4-byte instructions alike (measured: `sw` and `c.sw` store faults,
        # `ecall`); mepc must be the instruction itself.
        pc = (self._pc() - UNICORN_EXCEPTION_PC_OFFSET) & 0xFFFF_FFFF
        if self._pending_store is not None:
            pc, parts = self._pending_store
            self._pending_store = None
            for at, before in reversed(parts):
                uc.mem_write(at, before)
            addr = parts[0][0]
            self.traps.append((7, pc, addr))
            self._enter_trap(7, pc, addr)
            return
        priv = uc.reg_read(R.UC_RISCV_REG_PRIV)
        if intno == CAUSE_ECALL_FROM_U:
            # The hook gets QEMU's raw cause; the mode the ecall came from is added
            # when the trap is entered (8 from U, 11 from M).
            intno += priv
        if intno == CAUSE_ILLEGAL and priv == 3 and self._custom_csr(pc):
            return
        if intno in (1, 5, 7):
            tval = self._fault_address(pc, intno)
        elif intno == CAUSE_ILLEGAL:
            tval = int.from_bytes(uc.mem_read(pc, 4), "little")
            tval = tval if tval & 3 == 3 else tval & 0xFFFF
        else:
            tval = 0
        self.traps.append((intno, pc, tval))
        self._enter_trap(intno, pc, tval)

    def _custom_csr(self, pc):
        """Emulates csrr/csrw/csrs/csrc (and immediate forms) of PCER, PCMR, PCCR."""
        insn = int.from_bytes(self.uc.mem_read(pc, 4), "little")
        if insn & 0x7F != 0x73:
            return False
        csr, funct3 = insn >> 20, (insn >> 12) & 7
        if csr not in (PCER, PCMR, PCCR) or funct3 in (0, 4):
            return False
        rd = (insn >> 7) & 0x1F
        old = {PCER: 1, PCMR: self.pcmr, PCCR: (self.cycles() - self.pccr_base) & 0xFFFF_FFFF}[csr]
        new = csr_result(insn, old, self._x)
        if csr == PCMR and new is not None:
            self.pcmr = new & 3
        if csr == PCCR and new is not None:
            self.pccr_base = self.cycles() - new
        if rd:
            self.uc.reg_write(R.UC_RISCV_REG_X0 + rd, old)
        self.uc.reg_write(R.UC_RISCV_REG_PC, pc + 4)
        return True

    def _take_interrupt(self, pc):
        """Enters the trap for the line the matrix raises, if the CPU takes it now."""
        priv = self.uc.reg_read(R.UC_RISCV_REG_PRIV)
        ms = self.uc.reg_read(R.UC_RISCV_REG_MSTATUS)
        if priv == 3 and not ms & MSTATUS_MIE:
            return False
        line = self._pending_line()
        if line is None:
            return False
        self.interrupts += 1
        self.interrupts_on_line[line] += 1
        self._enter_trap(0x8000_0000 | line, pc, 0, interrupt_line=line)
        return True

    def _pending_line(self):
        # The planted USB-Serial-JTAG interrupt is raised for good (nothing serves it).
        levels = {self.STRAY_SOURCE: self.leftovers}
        for dev in self.devices:
            levels.update(dev.levels())
        return self.intmatrix.line_to_take(levels)

    def _on_task_block(self, uc, addr, size, _data):
        key = (addr, size)
        if key in self._checked_blocks:
            return
        bad = first_outside_rv32imc(addr, uc.mem_read(addr, size))
        if bad and bad[0] < addr + size:
            self._fail(f"task code: {bad[1]} (instruction {bad[2]:#x} at {bad[0]:#010x})")
            uc.reg_write(R.UC_RISCV_REG_PC, addr)
            return
        self._checked_blocks.add(key)

    def _on_mret(self, uc, addr, size, _data):
        """mret: an interrupt pending for the mode it returns to is taken at once, at
        the instruction it returns to (as the chip would, one instruction later)."""
        ms = uc.reg_read(R.UC_RISCV_REG_MSTATUS)
        if self._pending_store is not None:
            self._fail("simulator: a caught store's fault was not entered")
            return
        if (ms >> MPP_SHIFT) & 3 == 0:
            self._guard_stores()
        if (ms >> MPP_SHIFT) & 3 == 3 and not ms & MSTATUS_MPIE:
            return
        line = self._pending_line()
        if line is None:
            return
        self.interrupts += 1
        self.interrupts_on_line[line] += 1
        epc = uc.reg_read(R.UC_RISCV_REG_MEPC)
        self._enter_trap(0x8000_0000 | line, epc, 0, interrupt_line=line, after_mret=True)

    def _on_pmp_csr(self, uc, addr, size, insn):
        """Before a kernel instruction that writes a PMP CSR runs: the shadow takes the
        value it will write."""
        csr = insn >> 20
        new = csr_result(insn, self.pmp.read(csr), self._x)
        if new is not None:
            self.pmp.write(csr, new)

    def _guard_stores(self):
        """Hooks the stores the shadow PMP denies U-mode within pages it can reach, when
        the PMP changed since the last mret to U-mode. Hooks are slow to add and
        delete (about half a millisecond each), so one stays while its bytes are not
        writable: a guard over bytes the running task cannot reach at all is never
        met by its stores (unicorn's TLB fill faults them first, the TLB being
        flushed at every trap), only by the kernel's, which it lets through."""
        state = self.pmp.state()
        if state == self._guarded_pmp:
            return
        self._guarded_pmp = state
        if state not in self._guards_for:
            if len(self._guards_for) > 4096:
                self._guards_for.clear()
            wanted, writable = [], []
            for base in (SRAM_DATA_BASE, SRAM_DATA_BASE + IRAM_ALIAS):
                wanted += self.pmp.denied_stores_near_user(base, base + SRAM_BYTES)
                writable += [(lo, hi) for lo, hi, rwx in self.pmp.user_rights(base, base + SRAM_BYTES)
                             if rwx & pmp.W]
            self._guards_for[state] = (wanted, writable)
        wanted, writable = self._guards_for[state]
        for rng in [r for r in self._store_guards if any(r[0] < hi and lo < r[1] for lo, hi in writable)]:
            h = self._store_guards.pop(rng)
            # Unicorn frees a hook deleted during emulation only when emu_start
            # returns; its Python binding drops the callback at once. Keep the
            # callback alive until then (run() lets go of it between slices).
            self._retired_callbacks.append(self.uc._callbacks.get(h))
            self.uc.hook_del(h)
        for lo, hi in wanted:
            if (lo, hi) not in self._store_guards:
                self._store_guards[(lo, hi)] = self.uc.hook_add(
                    UC_HOOK_MEM_WRITE, self._on_guarded_store, None, lo, hi - 1)

    def _on_guarded_store(self, uc, access, addr, size, value, _data):
        """A store the PMP denies U-mode, before it lands. If U-mode makes it (unicorn
        let it through a TLB entry another access filled), it becomes the store
        access fault. A memory hook may only move the pc (a TLB flush or a privilege
        change here frees the TLB entry the store in flight still uses), and the store
        lands when it returns; so the pc goes to the kernel's trap vector, which U-mode
        cannot fetch, and _on_exception turns that fetch fault into this store's fault
        and puts the bytes back, before any kernel instruction runs."""
        if uc.reg_read(R.UC_RISCV_REG_PRIV) != 0 or self.pmp.user_may_store(addr, addr + size):
            return
        if self._pending_store is not None:
            # The store in flight, again: unicorn may call the hook once more for it
            # (seen on a heap-app run: the pc then reads 0 and the bytes have landed),
            # so the first call's pc and bytes stand; only bytes of the store not seen
            # yet (a store unicorn splits) are kept as well.
            pc, parts = self._pending_store
            if not any(a <= addr and addr + size <= a + len(b) for a, b in parts):
                parts.append((addr, bytes(uc.mem_read(addr, size))))
            return
        vector = uc.reg_read(R.UC_RISCV_REG_MTVEC) & ~3
        if any(rwx & pmp.X for _, _, rwx in self.pmp.user_rights(vector, vector + 2)):
            self._fail(f"simulator: cannot fault the store to {addr:#010x}: U-mode may "
                       f"execute the trap vector at {vector:#010x}")
            return
        self._pending_store = (self._pc(), [(addr, bytes(uc.mem_read(addr, size)))])
        self.caught_stores += 1
        uc.reg_write(R.UC_RISCV_REG_PC, vector)

    def _on_wfi(self, uc, addr, size, _data):
        """wfi: the clock skips to the next alarm when nothing is pending; the CPU
        resumes after the wfi, taking the interrupt if mstatus.MIE allows."""
        ms = uc.reg_read(R.UC_RISCV_REG_MSTATUS)
        if uc.reg_read(R.UC_RISCV_REG_PRIV) == 3 and not ms & MSTATUS_MIE:
            self._fail("halted: wfi with mstatus.MIE off (nothing can take an interrupt)")
            uc.reg_write(R.UC_RISCV_REG_PC, addr)
            return
        if self._pending_line() is None:
            nxt = self.systimer.next_event_cycles()
            if nxt is None:
                if not self.uart_input_possible:
                    self._fail("halted: wfi with no alarm set and no console input to come")
                    uc.reg_write(R.UC_RISCV_REG_PC, addr)
                    return
            elif nxt > self.cycles():
                self.idle_cycles += nxt - self.cycles()
        if not self._take_interrupt(addr + 4):
            uc.reg_write(R.UC_RISCV_REG_PC, addr + 4)

    uart_input_possible = False

    # --- running ------------------------------------------------------------------

    def run(self, max_instructions, poll=None):
        """Runs until `max_instructions` have run in total, the run stops, or `poll`
        (called between slices: console input, brown-out) returns True; returns the
        Stop, or None."""
        while self.stop is None and self.instructions < max_instructions:
            for dev in (self.rtc, *self.timg):
                seconds = self.timebase.seconds()
                try:
                    dev.check(seconds) if dev is self.rtc else dev.wdt.check(seconds)
                except periph.WatchdogExpired as e:
                    self.stop = Stop(str(e), self._pc())
                    break
            if self.stop:
                break
            try:
                if poll and poll(self):
                    break
            except periph.RtcCntl.BrownOutReset as e:
                self.stop = Stop(str(e), self._pc())
                break
            pc = self._pc()
            self._take_interrupt(pc)
            n = min(SLICE, max_instructions - self.instructions)
            nxt = self.systimer.next_event_cycles()
            if nxt is not None and nxt > self.cycles():
                n = max(1, min(n, nxt - self.cycles()))
            try:
                self.uc.emu_start(self._pc(), 0, 0, n)
            except UcError as e:
                if self.stop is None:
                    self.stop = Stop(f"unicorn: {e}", self._pc())
            # The slice ran exactly n instructions unless the run was stopped inside
            # it: then at most n, and the total is only an upper bound.
            self.instructions += n
            self._retired_callbacks.clear()
            if self.stop is not None:
                self.count_exact = False
        return self.stop

    def close(self):
        self.fram_map.flush()
        self.fram_map.close()
        self.fram_file.close()
