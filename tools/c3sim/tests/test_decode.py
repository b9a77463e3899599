"""What the simulator refuses to run: instructions outside RV32IMC and the CSRs the
ESP32-C3 does not have."""

import unittest

from c3sim.machine import first_outside_rv32imc, outside_rv32imc


class DecodeTest(unittest.TestCase):
    def test_rv32imc_passes(self):
        for word in (0x00B50533, 0x02B50533, 0x00000013, 0x30047073, 0x34202573, 0x4501, 0xC606):
            self.assertIsNone(outside_rv32imc(word), hex(word))  # add, mul, nop, csrci mstatus, csrr mcause, c.li, c.swsp

    def test_a_f_and_absent_csrs_are_named(self):
        self.assertIn("atomic", outside_rv32imc(0x00B5202F))  # amoadd.w
        self.assertIn("floating-point", outside_rv32imc(0x00052007))  # flw
        self.assertIn("mie", outside_rv32imc(0x30402573))  # csrr a0, mie
        self.assertIn("mip", outside_rv32imc(0x34402573))
        self.assertIn("minstret", outside_rv32imc(0xB0202573))
        self.assertIn("compressed floating-point", outside_rv32imc(0x2108))  # c.fld

    def test_a_sweep_finds_the_first_one_on_instruction_boundaries(self):
        code = (0x4501).to_bytes(2, "little") + (0x00B50533).to_bytes(4, "little") + (0x00B5202F).to_bytes(4, "little")
        self.assertEqual(first_outside_rv32imc(0x4038_0000, code)[0], 0x4038_0006)
        self.assertIsNone(first_outside_rv32imc(0x4038_0000, code[:6]))


if __name__ == "__main__":
    unittest.main()
