"""The shadow PMP's reading of the privileged spec (3.7): TOR, NA4 and NAPOT regions,
the lowest-numbered match deciding, no match denying U-mode, and the store ranges the
simulator must guard because unicorn can miss them."""

import unittest

from c3sim import pmp

TOR, NA4, NAPOT = 1 << 3, 2 << 3, 3 << 3
R, W, X = pmp.R, pmp.W, pmp.X


def shadow(*entries):
    """`entries`: (pmpaddr, cfg byte) from entry 0 on."""
    p = pmp.ShadowPmp()
    for i, (addr, cfg) in enumerate(entries):
        p.write(pmp.PMPADDR0 + i, addr)
        p.write(pmp.PMPCFG0 + i // 4, p.read(pmp.PMPCFG0 + i // 4) | cfg << (8 * (i % 4)))
    return p


class ShadowPmpTest(unittest.TestCase):
    def test_tor_napot_and_na4_regions(self):
        p = shadow((0x1000 >> 2, 0), (0x1800 >> 2, TOR | R | W),  # [0x1000, 0x1800) RW
                   ((0x2000 >> 2) | 0x7F, NAPOT | R),  # [0x2000, 0x2400) R: 1 KiB
                   (0x3000 >> 2, NA4 | X))  # [0x3000, 0x3004) X
        self.assertEqual(p.entries(), [(0x1000, 0x1800, R | W), (0x2000, 0x2400, R), (0x3000, 0x3004, X)])
        self.assertEqual(p.user_rights(0x0, 0x4000), [
            (0x0, 0x1000, 0), (0x1000, 0x1800, R | W), (0x1800, 0x2000, 0),
            (0x2000, 0x2400, R), (0x2400, 0x3000, 0), (0x3000, 0x3004, X), (0x3004, 0x4000, 0)])

    def test_the_lowest_numbered_matching_entry_decides(self):
        # Entry 0 makes [0x1000, 0x1100) read-only inside entry 1's RW [0x1000, 0x2000).
        p = shadow(((0x1000 >> 2) | 0x1F, NAPOT | R), (0x1000 >> 2, 0), (0x2000 >> 2, TOR | R | W))
        self.assertEqual(p.user_rights(0x1000, 0x2000), [(0x1000, 0x1100, R), (0x1100, 0x2000, R | W)])
        self.assertFalse(p.user_may_store(0x10FE, 0x1102), "one byte denied denies the store")
        self.assertTrue(p.user_may_store(0x1100, 0x1104))

    def test_guarded_stores_are_the_denied_bytes_of_reachable_pages(self):
        # RW [0x1000, 0x1800), R [0x1800, 0x3000): pages 1 and 2 are reachable; page 3
        # has no right at all, so unicorn's TLB fill faults it and it needs no guard.
        p = shadow((0x1000 >> 2, 0), (0x1800 >> 2, TOR | R | W), (0x3000 >> 2, TOR | R))
        self.assertEqual(p.denied_stores_near_user(0x0, 0x4000), [(0x1800, 0x2000), (0x2000, 0x3000)])

    def test_off_entries_and_empty_ranges_match_nothing(self):
        p = shadow((0x2000 >> 2, R | W), (0x1000 >> 2, TOR | R | W))  # OFF; TOR with hi < lo
        self.assertEqual(p.entries(), [])
        self.assertEqual(p.user_rights(0x0, 0x4000), [(0x0, 0x4000, 0)])


if __name__ == "__main__":
    unittest.main()
