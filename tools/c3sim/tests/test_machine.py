"""The CPU wiring on hand-assembled images: SRAM seen through both aliases, the trap
entry unicorn leaves to the host (mepc, mcause, the vectored mtvec), and the stop at
an undecoded address naming it and the pc."""

import os
import tempfile
import unittest

from unicorn import riscv_const as R

from c3sim.machine import Machine
from tests.test_periph import make_image

BASE = 0x4038_0000


def lui(rd, imm):
    return (imm & 0xFFFFF000) | rd << 7 | 0x37


def addi(rd, rs1, imm):
    return (imm & 0xFFF) << 20 | rs1 << 15 | rd << 7 | 0x13


def li(rd, value):
    """lui + addi for any 32-bit value."""
    hi = (value + 0x800) & 0xFFFFF000
    return [lui(rd, hi), addi(rd, rd, value - hi)]


def sw(rs2, rs1, imm=0):
    return (imm >> 5) << 25 | rs2 << 20 | rs1 << 15 | 2 << 12 | (imm & 0x1F) << 7 | 0x23


def lw(rd, rs1, imm=0):
    return imm << 20 | rs1 << 15 | 2 << 12 | rd << 7 | 0x03


def lb(rd, rs1, imm=0):
    return imm << 20 | rs1 << 15 | rd << 7 | 0x03


def csrw(csr, rs1):
    return csr << 20 | rs1 << 15 | 1 << 12 | 0x73


ECALL = 0x0000_0073
MRET = 0x3020_0073
LOOP = 0x0000_006F  # j .
T0, T1, A0, A1 = 5, 6, 10, 11


def program(words):
    code = b"".join(w.to_bytes(4, "little") for w in words)
    return code.ljust(0x100, b"\0") + LOOP.to_bytes(4, "little") * 32


class MachineTest(unittest.TestCase):
    def boot(self, words, instructions=200):
        fd, fram = tempfile.mkstemp()
        os.close(fd)
        os.remove(fram)
        self.addCleanup(lambda: os.path.exists(fram) and os.remove(fram))
        m = Machine(make_image(BASE, [(BASE, program(words))]), fram, leftovers=False)
        stop = m.run(instructions)
        m.close()
        return m, stop

    def test_sram_is_one_memory_at_both_aliases(self):
        words = li(T0, 0x3FC9_0000) + li(T1, 0x1234_5678) + [sw(T1, T0)] + li(A0, 0x4039_0000) + [lw(A1, A0), LOOP]
        m, stop = self.boot(words)
        self.assertIsNone(stop)
        self.assertEqual(m.uc.reg_read(R.UC_RISCV_REG_X0 + A1), 0x1234_5678)

    def test_an_ecall_enters_the_vector_base_with_mepc_and_mcause(self):
        words = li(T0, BASE + 0x101) + [csrw(0x305, T0), ECALL, LOOP]
        m, stop = self.boot(words)
        self.assertIsNone(stop)
        ecall_at = BASE + 4 * 3
        self.assertEqual(m.uc.reg_read(R.UC_RISCV_REG_MEPC), ecall_at)
        self.assertEqual(m.uc.reg_read(R.UC_RISCV_REG_MCAUSE), 11)
        self.assertEqual(m.uc.reg_read(R.UC_RISCV_REG_PC), BASE + 0x100)
        self.assertEqual(m.traps, [(11, ecall_at, 0)])

    def test_a_systimer_alarm_arrives_on_its_line_through_the_vectored_mtvec(self):
        st, im = 0x6002_3000, 0x600C_2000
        words = li(T0, BASE + 0x101) + [csrw(0x305, T0)]
        for addr, value in ((st + 0x34, 1 << 30 | 100), (st + 0x50, 1), (st + 0x00, 1 << 30 | 1 << 24),
                            (st + 0x64, 1), (im + 4 * 37, 5), (im + 0x114 + 4 * 5, 1), (im + 0x104, 1 << 5)):
            words += li(T0, addr) + li(T1, value) + [sw(T1, T0)]
        words += [0x30046073, LOOP]  # csrsi mstatus, MIE; j .
        # Interrupts are looked at between slices: two slices at least.
        m, stop = self.boot(words, instructions=50_000)
        self.assertIsNone(stop)
        self.assertEqual(m.uc.reg_read(R.UC_RISCV_REG_MCAUSE), 0x8000_0005)
        self.assertEqual(m.uc.reg_read(R.UC_RISCV_REG_PC), BASE + 0x100 + 4 * 5)
        self.assertEqual(m.interrupts, 1, "taken once: mstatus.MIE is off in the handler")

    def test_an_undecoded_address_stops_the_run_naming_it_and_the_pc(self):
        words = li(T0, 0x6005_0000) + [lw(A0, T0), LOOP]
        m, stop = self.boot(words)
        self.assertIsNotNone(stop)
        self.assertIn("0x60050000", str(stop))
        self.assertEqual(stop.pc, BASE + 8)

    def test_only_aligned_words_load_through_the_instruction_bus(self):
        m, stop = self.boot(li(A0, 0x4039_0000) + [lw(A1, A0), LOOP])
        self.assertIsNone(stop)
        self.assertEqual(m.ibus_word_loads, 1)
        for load in (lb(A1, A0), lw(A1, A0, 2)):
            m, stop = self.boot(li(A0, 0x4039_0000) + [load, LOOP])
            self.assertIsNotNone(stop)
            self.assertIn("through the instruction bus", str(stop))
            self.assertEqual(stop.pc, BASE + 8)

    def test_a_user_store_the_pmp_denies_faults_after_a_load_from_its_page(self):
        # PMP: [0x3FC9_0000, +0x800) RW, [+0x800, +0x1000) R, then X up to the code.
        page = 0x3FC9_0000
        cfg = 0x0C << 24 | 0x09 << 16 | 0x0B << 8  # entry 0 OFF (TOR base), 1 RW, 2 R, 3 X
        words = li(T0, BASE + 0x100) + [csrw(0x305, T0)]
        for n, value in enumerate((page >> 2, (page + 0x800) >> 2, (page + 0x1000) >> 2, (BASE + 0x1000) >> 2)):
            words += li(T0, value) + [csrw(0x3B0 + n, T0)]
        words += li(T0, cfg) + [csrw(0x3A0, T0)]
        user = BASE + 4 * (len(words) + 4)
        words += li(T0, user) + [csrw(0x341, T0), MRET]
        assert BASE + 4 * len(words) == user
        # U-mode: a load from the writable half fills the page's TLB entry, then a
        # store to the read-only half must still fault (cause 7, mtval its address).
        words += li(T0, page + 0x400) + [lw(A1, T0), addi(T1, 0, 0x55), sw(T1, T0, 0x7FC), LOOP]
        m, stop = self.boot(words, instructions=400)
        self.assertIsNone(stop)
        store_at = BASE + 4 * (len(words) - 2)
        self.assertEqual(m.traps, [(7, store_at, page + 0xBFC)])
        self.assertEqual(bytes(m.uc.mem_read(page + 0xBFC, 4)), bytes(4), "the store left no trace")
        self.assertEqual(m.caught_stores, 1)

    def test_a_caught_store_seen_twice_faults_at_its_own_pc_with_its_bytes_back(self):
        # Unicorn may call the store hook twice for one store (a heap-app run did): the
        # second time the pc reads 0 and the bytes have landed. The fault must still
        # name the store's pc and put back what the bytes were before it.
        m, _ = self.boot([LOOP], instructions=1)
        page = 0x3FC9_0000
        m.pmp.write(0x3B0, (page + 0x1000) >> 2)
        m.pmp.write(0x3A0, 0x09)  # entry 0: TOR [0, page + 0x1000), R only
        at, store_pc, before = page + 0x10, BASE + 0x40, b"\x11\x22\x33\x44"
        m.uc.mem_write(at, before)
        m.uc.reg_write(R.UC_RISCV_REG_PRIV, 0)
        m.uc.reg_write(R.UC_RISCV_REG_PC, store_pc)
        m._on_guarded_store(m.uc, None, at, 4, 0x10, None)
        m.uc.mem_write(at, (0x10).to_bytes(4, "little"))  # the store lands
        m.uc.reg_write(R.UC_RISCV_REG_PC, 0)
        m._on_guarded_store(m.uc, None, at, 4, 0x10, None)
        m._on_exception(m.uc, 1, None)
        self.assertEqual(m.traps[-1], (7, store_pc, at))
        self.assertEqual(bytes(m.uc.mem_read(at, 4)), before)
        self.assertEqual(m.caught_stores, 1)


if __name__ == "__main__":
    unittest.main()
