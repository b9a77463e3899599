"""Unit tests of the peripheral models and the image parser, against the TRM's
addresses and values and the MB85RS4MT's command set."""

import hashlib
import struct
import unittest

from c3sim import image, periph


def make_image(entry, segments):
    out = bytearray([0xE9, len(segments), 2, 0x20]) + struct.pack("<I", entry)
    out += bytes([0xEE, 0, 0, 0]) + struct.pack("<H", 5) + bytes(9) + bytes([1])
    checksum = 0xEF
    for addr, data in segments:
        out += struct.pack("<II", addr, len(data)) + data
        for b in data:
            checksum ^= b
    out += bytes(15 - len(out) % 16) + bytes([checksum])
    return bytes(out + hashlib.sha256(out).digest())


class ImageTest(unittest.TestCase):
    def test_a_valid_image_gives_its_entry_and_segments(self):
        img = make_image(0x4038_0000, [(0x4038_0000, b"\x01\x02\x03\x04"), (0x3FC9_0000, b"abcd")])
        self.assertEqual(image.parse(img), (0x4038_0000, [(0x4038_0000, b"\x01\x02\x03\x04"), (0x3FC9_0000, b"abcd")]))

    def test_checksum_hash_and_chip_are_verified(self):
        img = bytearray(make_image(0x4038_0000, [(0x4038_0000, b"\x01\x02\x03\x04")]))
        bad = bytearray(img)
        bad[32] ^= 1  # a segment byte: the checksum no longer matches
        with self.assertRaisesRegex(image.ImageError, "checksum"):
            image.parse(bytes(bad))
        bad = bytearray(img)
        bad[-1] ^= 1
        with self.assertRaisesRegex(image.ImageError, "SHA-256"):
            image.parse(bytes(bad))
        bad = bytearray(img)
        bad[12] = 9
        with self.assertRaisesRegex(image.ImageError, "chip id 9"):
            image.parse(bytes(bad))


class Recorder:
    def __init__(self):
        self.out = bytearray()

    def __call__(self, b):
        self.out.append(b)


class UartTest(unittest.TestCase):
    def test_tx_goes_out_and_rx_raises_rxfifo_full_at_the_conf1_threshold(self):
        rec = Recorder()
        u = periph.Uart0(rec)
        u.write(0x00, ord("A"))
        self.assertEqual(rec.out, b"A")
        u.write(0x24, (u.read(0x24) & ~0x1FF) | 1)  # CONF1 threshold 1
        u.write(0x0C, 1)
        self.assertEqual(u.levels(), {21: False})
        u.feed(b"xy")
        self.assertEqual(u.read(0x1C) & 0x3FF, 2)
        self.assertEqual(u.levels(), {21: True})
        self.assertEqual(u.read(0x00), ord("x"))
        self.assertEqual(u.read(0x00), ord("y"))
        self.assertEqual(u.levels(), {21: False})

    def test_changing_the_frame_format_in_conf0_stops_the_console(self):
        u = periph.Uart0(Recorder())
        u.write(0x20, (u.read(0x20) & ~0x1FF) | 1)
        with self.assertRaises(periph.FrameChanged):
            u.write(0x00, 0x41)

    def test_an_unknown_register_is_undecoded(self):
        with self.assertRaises(periph.Undecoded):
            periph.Uart0(Recorder()).read(0x80)


class WatchdogTest(unittest.TestCase):
    def test_writes_without_the_key_are_ignored_and_an_enabled_rwdt_expires(self):
        r = periph.RtcCntl()
        r.write(0x90, 0)
        r.check(0.9)
        with self.assertRaises(periph.WatchdogExpired):
            r.check(1.0)
        r.write(0xA8, periph.WDT_WKEY)
        r.write(0x90, 0)
        r.write(0xB0, periph.SWD_WKEY)
        r.write(0xAC, 1 << 31)
        r.check(10.0)

    def test_brown_out_interrupts_only_with_its_resets_off(self):
        def off(r):
            """FIB_SEL's BOD bit and both reset enables cleared, the detector on."""
            r.write(0x10C, r.read(0x10C) & ~0b10)
            r.write(0xD8, (r.read(0xD8) & ~(1 << 26 | 1 << 28)) | 1 << 30)

        r = periph.RtcCntl()
        r.write(0xD8, r.read(0xD8) | 1 << 30)
        with self.assertRaisesRegex(periph.RtcCntl.BrownOutReset, "chip reset enabled"):
            r.brown_out()
        # The digital reset off is not enough: the analog one stays on FIB_SEL's signal.
        r = periph.RtcCntl()
        r.write(0xD8, (r.read(0xD8) & ~(1 << 26)) | 1 << 30)
        with self.assertRaisesRegex(periph.RtcCntl.BrownOutReset, "analog reset"):
            r.brown_out()
        r = periph.RtcCntl()
        r.write(0x10C, 0b101)
        r.write(0xD8, (r.read(0xD8) & ~(1 << 26)) | 1 << 30 | 1 << 28)
        with self.assertRaisesRegex(periph.RtcCntl.BrownOutReset, "ANA_RST_EN"):
            r.brown_out()
        r = periph.RtcCntl()
        r.brown_out()  # before the detector is on: seen once it is
        self.assertEqual(r.levels(), {27: False})
        off(r)
        r.write(0x40, 1 << 9)
        self.assertEqual(r.levels(), {27: True})
        r.write(0x4C, 1 << 9)
        self.assertEqual(r.levels(), {27: True}, "raised again while the supply is low")
        r = periph.RtcCntl()
        off(r)
        r.write(0x40, 1 << 9)
        r.write(0x4C, 1 << 9)
        self.assertEqual(r.levels(), {27: False}, "no brown-out, nothing raised")


class SystimerAndMatrixTest(unittest.TestCase):
    def test_comp0_period_fires_through_the_matrix_on_its_line(self):
        now = [0]
        t = periph.Systimer(periph.Timebase(lambda: now[0], 80_000_000))
        t.write(0x34, 1 << 30 | 160_000)
        t.write(0x50, 1)
        t.write(0x00, t.read(0x00) | 1 << 24)
        t.write(0x64, 1)
        m = periph.IntMatrix()
        m.write(4 * 37, 1)
        m.write(0x114 + 4 * 1, 1)
        m.write(0x104, 1 << 1)
        self.assertIsNone(m.line_to_take(t.levels()))
        self.assertEqual(t.next_event_cycles(), 160_000 * 5)
        now[0] = 160_000 * 5
        self.assertEqual(m.line_to_take(t.levels()), 1)
        m.write(0x194, 1)  # threshold 1: priority 1 no longer interrupts
        self.assertIsNone(m.line_to_take(t.levels()))
        m.write(0x194, 0)
        t.write(0x6C, 1)
        self.assertIsNone(m.line_to_take(t.levels()))
        self.assertEqual(t.next_event_cycles(), 2 * 160_000 * 5)

    def test_unit0_reads_after_an_update(self):
        t = periph.Systimer(periph.Timebase(lambda: 5 * 1234, 80_000_000))
        self.assertEqual(t.read(0x04), 0)
        t.write(0x04, 1 << 30)
        self.assertEqual(t.read(0x04), 1 << 29)
        self.assertEqual((t.read(0x40), t.read(0x44)), (0, 1234))


class ClockTest(unittest.TestCase):
    """SYSTEM's CPU clock registers (TRM 6.2), the BBPLL's bring-up the model demands,
    UART0's baud rate across the switch, and SYSTIMER's rate."""

    BBPLL_480 = [(4, 7, 0, 0x6B), (2, 7, 0, 0x50), (3, 7, 0, 8), (5, 2, 0, 0), (5, 6, 4, 0),
                 (6, 7, 0, 0x93), (9, 1, 0, 2), (6, 5, 4, 2), (6, 7, 6, 1)]

    def chip(self, rom_on_pll=False):
        now = [0]
        rtc, ana = periph.RtcCntl(), periph.AnaMaster()
        analog = periph.Analog(ana.bbpll_master_on, configured=rom_on_pll)
        s = periph.system(None, rom_on_pll, rtc, ana, analog)
        tb = periph.Timebase(lambda: now[0], s.cpu_hz())
        s.timebase = tb
        return now, tb, s, rtc, ana, analog

    def bring_up(self, s, ana, analog):
        ana.write(0x44, 0x3FF << 8 & ~(1 << 17))
        ana.write(0x40, 1 << 3)
        for reg, msb, lsb, value in self.BBPLL_480:
            analog.write_mask(0x66, 0, reg, msb, lsb, value)

    def test_from_the_crystal_to_160_mhz_keeps_systimer_at_16_mhz(self):
        now, tb, s, _rtc, ana, analog = self.chip()
        self.assertEqual((s.read(0x08), s.read(0x58)), (0x0C, 0x0002_8000))
        self.assertEqual((s.cpu_hz(), s.apb_hz()), (40_000_000, 40_000_000))
        now[0] = 40_000_000  # one second at 40 MHz
        self.assertEqual(tb.counts(), 16_000_000)
        self.bring_up(s, ana, analog)
        s.write(0x08, 0x0D)  # CPUPERIOD_SEL = 1: no change while on the crystal
        self.assertEqual(s.cpu_hz(), 40_000_000)
        s.write(0x58, 0x0002_8400)  # SOC_CLK_SEL = PLL
        self.assertEqual((s.cpu_hz(), s.apb_hz()), (160_000_000, 80_000_000))
        now[0] += 160_000_000  # one more second, at 160 MHz
        self.assertEqual(tb.counts(), 32_000_000)
        self.assertEqual(tb.cycle_of(32_000_010), now[0] + 100)

    def test_the_pll_must_be_powered_configured_and_calibrating(self):
        _now, _tb, s, rtc, ana, analog = self.chip()
        with self.assertRaisesRegex(periph.ClockRefused, "not set for 480 MHz.*calibration"):
            s.write(0x58, 0x0002_8400)
        self.bring_up(s, ana, analog)
        rtc.write(0x00, 1 << 10)
        with self.assertRaisesRegex(periph.ClockRefused, "powered down"):
            s.write(0x58, 0x0002_8400)
        rtc.write(0x00, 0)
        s.write(0x58, 0x0002_8400)
        self.assertEqual(s.cpu_hz(), 80_000_000)

    def test_a_bbpll_write_with_its_master_off_is_refused(self):
        _now, _tb, _s, _rtc, ana, analog = self.chip()
        ana.write(0x44, 1 << 17)
        with self.assertRaisesRegex(periph.ClockRefused, "master off"):
            analog.write_mask(0x66, 0, 4, 7, 0, 0x6B)
        analog.write_mask(0x6D, 0, 6, 4, 0, 28)  # the regulators' block is not gated
        self.assertEqual(analog.regs[(0x6D, 6)], 28)

    def test_writes_the_chip_would_not_survive_are_refused(self):
        for value, why in [(0x0E, "reserved"), (0x0F, "reserved"), (0x1D, "WAIT"), (0x10C, "reserved bits")]:
            with self.assertRaisesRegex(periph.ClockRefused, why):
                self.chip()[2].write(0x08, value)
        with self.assertRaisesRegex(periph.ClockRefused, "read-only"):
            self.chip()[2].write(0x58, 0x0002_0000)
        with self.assertRaisesRegex(periph.ClockRefused, "RC_FAST"):
            self.chip()[2].write(0x58, 0x0002_8800)
        on_pll = self.chip(rom_on_pll=True)[2]
        self.assertEqual(on_pll.cpu_hz(), 80_000_000)
        with self.assertRaisesRegex(periph.ClockRefused, "PLL_FREQ_SEL"):
            on_pll.write(0x08, 0x08)
        on_pll.write(0x08, 0x0D)
        self.assertEqual(on_pll.cpu_hz(), 160_000_000)

    def test_the_console_keeps_115200_only_on_the_crystal(self):
        _now, _tb, s, _rtc, ana, analog = self.chip()
        rec = Recorder()
        u = periph.Uart0(rec, s.apb_hz)
        u.write(0x00, 0x41)
        self.bring_up(s, ana, analog)
        s.write(0x58, 0x0002_8400)
        with self.assertRaisesRegex(periph.FrameChanged, "2304\\d\\d baud"):
            u.write(0x00, 0x42)
        u.write(0x78, (u.read(0x78) & ~(0x3FFFFF)) | 3 << 20)
        u.write(0x14, 3 << 20 | 347)
        u.write(0x00, 0x43)
        self.assertEqual(rec.out, b"AC")
        self.assertEqual(u.bauds, {115212})


class GpioInterruptTest(unittest.TestCase):
    def test_a_falling_edge_on_an_enabled_input_raises_source_16_until_cleared(self):
        mux = periph.io_mux()
        g = periph.Gpio(mux)
        mux.write(0x04 + 4 * 3, 0x1300)  # GPIO function, FUN_IE, FUN_WPU
        g.write(0x74 + 4 * 3, 2 << 7 | 1 << 13)
        self.assertEqual(g.levels(), {16: False})
        g.drive_input(3, True)  # rising or staying high: nothing
        self.assertEqual(g.levels(), {16: False})
        g.drive_input(3, False)
        self.assertEqual((g.levels(), g.read(0x44), g.read(0x5C)), ({16: True}, 1 << 3, 1 << 3))
        g.drive_input(3, True)
        self.assertEqual(g.levels(), {16: True}, "the status bit holds until cleared")
        g.write(0x4C, 1 << 3)
        self.assertEqual(g.levels(), {16: False})

    def test_no_edge_without_input_enable_output_off_or_interrupt_type(self):
        mux = periph.io_mux()
        g = periph.Gpio(mux)
        g.write(0x74 + 4 * 3, 2 << 7 | 1 << 13)
        mux.write(0x04 + 4 * 3, 0x1000)  # FUN_IE off
        g.drive_input(3, False)
        self.assertEqual(g.read(0x44), 0)
        mux.write(0x04 + 4 * 3, 0x1200)
        g.write(0x24, 1 << 3)  # output on
        g.drive_input(3, True)
        g.drive_input(3, False)
        self.assertEqual(g.read(0x44), 0)
        with self.assertRaises(periph.Undecoded):
            g.write(0x74 + 4 * 3, 1 << 7)  # rising edge: not modelled


class FramOnSpiTest(unittest.TestCase):
    def wired(self, array):
        gpio = periph.Gpio()
        system = periph.system()
        spi = periph.Spi2(gpio, system, periph.Mb85rs4mt(array), (6, 2, 7, 10))
        system.write(0x10, system.read(0x10) | 1 << 6)
        spi.write(0xE8, 0b111)
        for pin, sig in ((6, 63), (7, 65)):
            gpio.write(0x554 + 4 * pin, sig)
            gpio.write(0x24, 1 << pin)
        gpio.write(0x154 + 4 * 64, 0x40 | 2)
        gpio.write(0x08, 1 << 10)
        gpio.write(0x24, 1 << 10)
        spi.chip_select_changed()
        return gpio, spi

    def command(self, gpio, spi, out):
        gpio.write(0x0C, 1 << 10)
        spi.chip_select_changed()
        back = bytearray()
        for i in range(0, len(out), 64):
            chunk = out[i : i + 64]
            for w in range(0, len(chunk), 4):
                spi.write(0x98 + w, int.from_bytes(chunk[w : w + 4].ljust(4, b"\0"), "little"))
            spi.write(0x1C, 8 * len(chunk) - 1)
            spi.write(0x00, 1 << 24)
            for w in range(0, len(chunk), 4):
                back += spi.read(0x98 + w).to_bytes(4, "little")
            back = back[: i + len(chunk)]
        gpio.write(0x08, 1 << 10)
        spi.chip_select_changed()
        return bytes(back)

    def test_rdid_write_enable_write_and_read_back(self):
        array = bytearray(b"\xff" * periph.Mb85rs4mt.SIZE)
        gpio, spi = self.wired(array)
        self.assertEqual(self.command(gpio, spi, b"\x9f" + bytes(4))[1:], bytes([4, 0x7F, 0x49, 3]))
        self.command(gpio, spi, b"\x02\x00\x01\x00abc")
        self.assertEqual(array[0x100:0x103], b"\xff\xff\xff", "no WREN: not written")
        self.command(gpio, spi, b"\x06")
        self.command(gpio, spi, b"\x02\x07\xff\xfe" + bytes(range(100)))
        self.assertEqual(array[0x7FFFE:0x80000], bytes([0, 1]), "addresses wrap at 512 KiB")
        self.assertEqual(array[0:98], bytes(range(2, 100)))
        self.assertEqual(self.command(gpio, spi, b"\x05\x00")[1] & 2, 0, "WEL cleared after WRITE")
        self.assertEqual(self.command(gpio, spi, b"\x03\x00\x00\x00" + bytes(3))[4:], bytes([2, 3, 4]))

    def test_a_transfer_with_the_pins_not_routed_is_refused(self):
        gpio = periph.Gpio()
        spi = periph.Spi2(gpio, periph.system(), periph.Mb85rs4mt(bytearray(periph.Mb85rs4mt.SIZE)))
        spi.write(0x1C, 7)
        with self.assertRaises(periph.Spi2.Miswired):
            spi.write(0x00, 1 << 24)


if __name__ == "__main__":
    unittest.main()
