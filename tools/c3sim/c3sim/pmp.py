"""The PMP as the kernel last programmed it, kept beside unicorn's, and what U-mode may
do byte by byte under it (RISC-V privileged spec 3.7: OFF/TOR/NA4/NAPOT, the
lowest-numbered matching entry decides, no match denies U-mode).

Why a second copy: unicorn 2.1's QEMU (5.0) checks PMP only when it fills a 4 KiB TLB
entry, and fills it with every right the page has without PMP (QEMU >= 6.1 limits the
entry to the PMP's rights). A U-mode load from a page the kernel write-protected
(dirty tracking) would leave a TLB entry through which a later store passes unchecked.
machine.py hooks the stores that PMP denies within the pages U-mode can reach, using
the ranges this file computes. Never touches the CPU.
"""

PMPCFG0, PMPADDR0 = 0x3A0, 0x3B0
ENTRIES = 16
R, W, X = 1, 2, 4
PAGE = 4096
OFF, TOR, NA4, NAPOT = range(4)


def is_pmp_csr(csr):
    return PMPCFG0 <= csr < PMPCFG0 + ENTRIES // 4 or PMPADDR0 <= csr < PMPADDR0 + ENTRIES


class ShadowPmp:
    def __init__(self):
        self.cfg = [0] * (ENTRIES // 4)
        self.addr = [0] * ENTRIES

    def read(self, csr):
        if csr >= PMPADDR0:
            return self.addr[csr - PMPADDR0]
        return self.cfg[csr - PMPCFG0]

    def write(self, csr, value):
        value &= 0xFFFF_FFFF
        if csr >= PMPADDR0:
            self.addr[csr - PMPADDR0] = value
        else:
            self.cfg[csr - PMPCFG0] = value

    def state(self):
        return tuple(self.cfg), tuple(self.addr)

    def entries(self):
        """(lo, hi, rwx) of every active entry, highest priority first; hi exclusive."""
        out = []
        for i in range(ENTRIES):
            cfg = (self.cfg[i // 4] >> (8 * (i % 4))) & 0xFF
            mode, rwx = (cfg >> 3) & 3, cfg & 7
            a = self.addr[i]
            if mode == TOR:
                lo, hi = (self.addr[i - 1] << 2 if i else 0), a << 2
            elif mode == NA4:
                lo, hi = a << 2, (a << 2) + 4
            elif mode == NAPOT:
                ones = 0
                while a >> ones & 1:
                    ones += 1
                lo = (a & ~((1 << ones) - 1)) << 2
                hi = lo + (8 << ones)
            else:
                continue
            if lo < hi:
                out.append((lo, hi, rwx))
        return out

    def user_rights(self, start, end):
        """[(lo, hi, rwx)] covering [start, end) with U-mode's rights, in order."""
        entries = self.entries()
        cuts = {start, end}
        for lo, hi, _ in entries:
            cuts.update(c for c in (lo, hi) if start < c < end)
        cuts = sorted(cuts)
        out = []
        for lo, hi in zip(cuts, cuts[1:]):
            rwx = next((r for elo, ehi, r in entries if elo <= lo < ehi), 0)
            if out and out[-1][2] == rwx and out[-1][1] == lo:
                out[-1] = (out[-1][0], hi, rwx)
            else:
                out.append((lo, hi, rwx))
        return out

    def denied_stores_near_user(self, start, end):
        """The ranges in [start, end) where a U-mode store must fault but which share a
        4 KiB page with bytes U-mode may reach (the only ones unicorn can miss), cut
        at page boundaries (so a page's ranges stay the same while its rights do)."""
        rights = self.user_rights(start, end)
        pages = set()
        for lo, hi, rwx in rights:
            if rwx:
                pages.update(range(lo // PAGE, (hi - 1) // PAGE + 1))
        out = []
        for lo, hi, rwx in rights:
            if rwx & W:
                continue
            for page in range(lo // PAGE, (hi - 1) // PAGE + 1):
                if page in pages:
                    out.append((max(lo, page * PAGE), min(hi, (page + 1) * PAGE)))
        return out

    def user_may_store(self, lo, hi):
        """Whether U-mode may store to every byte of [lo, hi)."""
        return all(rwx & W for _, _, rwx in self.user_rights(lo, hi))
