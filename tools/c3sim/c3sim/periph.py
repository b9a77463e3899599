"""Register models of the ESP32-C3 peripherals Amber's board uses, from the TRM (the
addresses are the ones drivers/esp32c3 names): UART0 (with its baud clock), RTC_CNTL
(RTC watchdog, super watchdog, brown-out and its interrupt, the BBPLL's power bits),
the analog I2C master's registers and the analog registers behind it (the BBPLL, the
regulators), the timer groups' watchdogs, SYSTIMER UNIT0 and COMP0, the interrupt
matrix, SYSTEM's peripheral clock and reset bits and the CPU clock, GPIO and the IO
MUX, and GP-SPI2 with an MB85RS4MT (or MB85RS4MTY) on its bus, wired to the pins of
the board (the paper's by default; chip select on a GPIO).

Each model answers only the registers it knows: any other offset raises Undecoded,
which stops the run naming the address. Time comes from a `clock` callable giving the
simulated CPU cycles since reset. Models never touch the emulator: machine.py wires
them to it.
"""

# The simulated CPU clock as the ROM leaves it after a power-on reset: 40 MHz from the
# crystal (esp-idf `bootloader_clock_init.c`; one instruction per cycle is the
# simulator's timing model; SYSTEM's clock registers change it, below). After a software
# reset from a firmware that ran on the PLL it may be 80 MHz from the PLL
# (`rom_on_pll`). SYSTIMER counts at 16 MHz from the crystal, whatever the CPU runs at.
XTAL_HZ = 40_000_000
CPU_HZ = XTAL_HZ
PLL_CPU_HZ = 80_000_000
APB_HZ_ON_PLL = 80_000_000
SYSTIMER_HZ = 16_000_000
# The FRAM's wiring on the paper's board (kernel/src/board/esp32c3/map.rs PAPER_PINS):
# (SCK, MISO, MOSI, CS).
PAPER_PINS = (6, 2, 7, 1)
CONSOLE_BAUD = 115_200


class Timebase:
    """Simulated time across CPU clock changes: `cycles` (a callable) gives the CPU
    cycles since reset, each as long as the CPU clock of its moment; SYSTIMER counts
    are 16 MHz time. A change of the CPU clock starts a new segment, so the counts go
    on at the same rate."""

    def __init__(self, cycles, cpu_hz=CPU_HZ):
        self.cycles = cycles
        self.base_cycles, self.base_counts, self.base_seconds = 0, 0, 0.0
        self.cpu_hz = cpu_hz
        self.cycles_per_count = cpu_hz / SYSTIMER_HZ

    def seconds(self):
        """Simulated time since reset: each segment's cycles at its CPU clock."""
        return self.base_seconds + (self.cycles() - self.base_cycles) / self.cpu_hz

    def counts(self):
        return self.base_counts + int((self.cycles() - self.base_cycles) / self.cycles_per_count)

    def cycle_of(self, counts):
        """The first CPU cycle at which SYSTIMER has counted `counts`."""
        ahead = max(0, counts - self.base_counts) * self.cycles_per_count
        return self.base_cycles + int(-(-ahead // 1))

    def set_cpu_hz(self, hz):
        now = self.cycles()
        self.base_counts, self.base_seconds, self.base_cycles = self.counts(), self.seconds(), now
        self.cpu_hz, self.cycles_per_count = hz, hz / SYSTIMER_HZ


class Undecoded(Exception):
    """An access to an address the simulated chip does not decode."""

    def __init__(self, addr, what):
        super().__init__(f"{what} at {addr:#010x}, which the simulator does not decode")
        self.addr = addr


class Device:
    """A block of 32-bit registers at `base`."""

    name = "device"
    base = 0
    size = 0x1000

    def read(self, off):
        raise Undecoded(self.base + off, f"read of {self.name} register +{off:#x}")

    def write(self, off, value):
        raise Undecoded(self.base + off, f"write of {self.name} register +{off:#x}")

    def levels(self):
        """Interrupt matrix source -> whether this device drives it now."""
        return {}


class Plain(Device):
    """Registers that only hold what is written (configuration the model does not act
    on), each named with its reset value."""

    def __init__(self, name, base, regs, size=0x1000):
        self.name, self.base, self.size = name, base, size
        self.regs = dict(regs)

    def read(self, off):
        if off not in self.regs:
            return super().read(off)
        return self.regs[off]

    def write(self, off, value):
        if off not in self.regs:
            return super().write(off, value)
        self.regs[off] = value


class FrameChanged(Exception):
    """UART0's frame format or baud rate changed from what the terminal expects."""


class Uart0(Device):
    """UART0 (TRM 26.x): the TX FIFO drains at once to `out` (a callable taking a
    byte), as long as the frame format is the ROM's 8N1 and the baud rate 115200 (within
    1.5 %: the baud rate is the core clock, CLK_CONF's SCLK_SEL (1 APB, 3 XTAL) divided
    by SCLK_DIV_NUM + 1 and by CLKDIV's integer and sixteenths; APB is `apb_hz()`,
    which follows the CPU clock); the RX FIFO holds what `feed` gave it; RXFIFO_FULL
    (INT_RAW bit 0) is raised while the RX count is at or above CONF1's threshold, and
    TXFIFO_EMPTY (bit 1) always (nothing stays in the TX FIFO). FSM_STATUS reads idle.
    It starts as the ROM leaves it: 115200 from APB, and, planted to check the board's
    clean-up (not known ROM behaviour), TXFIFO_EMPTY enabled: a level that would hold
    the console's line for good if only RXFIFO_FULL were ORed in. Source 21."""

    name, base, size = "UART0", 0x6000_0000, 0x1000
    SOURCE = 21
    FIFO, INT_RAW, INT_ST, INT_ENA, INT_CLR = 0x00, 0x04, 0x08, 0x0C, 0x10
    CLKDIV, STATUS, CONF0, CONF1 = 0x14, 0x1C, 0x20, 0x24
    FSM_STATUS, CLK_CONF = 0x6C, 0x78
    # CONF0 bits 5:0: parity off, 8 data bits, 1 stop bit (the ROM's 8N1).
    FRAME_MASK, FRAME_8N1 = 0x3F, 0x1C
    RXFIFO_FULL, TXFIFO_EMPTY = 1 << 0, 1 << 1
    RX_FIFO_BYTES = 128
    SCLK_APB, SCLK_XTAL = 1, 3

    def __init__(self, out, apb_hz=lambda: CPU_HZ):
        self.out = out
        self.apb_hz = apb_hz
        self.rx = bytearray()
        self.int_ena = self.TXFIFO_EMPTY
        self.conf0 = 0x1000_001C
        self.conf1 = 0x0000_C060  # reset: RX-full and TX-empty thresholds 0x60
        # As the ROM sets it: APB, undivided, CLKDIV for 115200 at the APB of its moment.
        self.clk_conf = 0x0340_0000 | self.SCLK_APB << 20
        self.clkdiv = self.divider_for(apb_hz(), CONSOLE_BAUD)
        self.bauds = set()

    @staticmethod
    def divider_for(sclk_hz, baud):
        sixteenths = (sclk_hz << 4) // baud
        return (sixteenths & 0xF) << 20 | sixteenths >> 4

    def sclk_hz(self):
        sel = (self.clk_conf >> 20) & 3
        if sel == self.SCLK_APB:
            return self.apb_hz()
        if sel == self.SCLK_XTAL:
            return XTAL_HZ
        raise Undecoded(self.base + self.CLK_CONF, f"UART0 core clock source {sel} (RC_FAST is not modelled)")

    def baud(self):
        div_num = (self.clk_conf >> 12) & 0xFF
        sixteenths = ((self.clkdiv & 0xFFF) << 4) | ((self.clkdiv >> 20) & 0xF)
        if not sixteenths:
            return 0
        return self.sclk_hz() * 16 / sixteenths / (div_num + 1)

    def feed(self, data):
        space = self.RX_FIFO_BYTES - len(self.rx)
        self.rx += bytes(data[:space])

    def _raw(self):
        threshold = self.conf1 & 0x1FF
        full = len(self.rx) >= max(threshold, 1)
        return (self.RXFIFO_FULL if full else 0) | self.TXFIFO_EMPTY

    def read(self, off):
        if off == self.FIFO:
            return self.rx.pop(0) if self.rx else 0
        if off == self.STATUS:
            return len(self.rx)  # TX count 0: the FIFO drains at once
        regs = {self.INT_RAW: self._raw(), self.INT_ST: self._raw() & self.int_ena,
                self.INT_ENA: self.int_ena, self.CONF0: self.conf0, self.CONF1: self.conf1,
                self.CLKDIV: self.clkdiv, self.FSM_STATUS: 0, self.CLK_CONF: self.clk_conf}
        if off in regs:
            return regs[off]
        return super().read(off)

    def write(self, off, value):
        if off == self.FIFO:
            if self.conf0 & self.FRAME_MASK != self.FRAME_8N1:
                raise FrameChanged(
                    f"UART0 sends with CONF0 = {self.conf0:#010x}: no longer the ROM's 8N1 "
                    "(a terminal at 115200 8N1 would show garbage)"
                )
            baud = self.baud()
            if abs(baud - CONSOLE_BAUD) > 0.015 * CONSOLE_BAUD:
                raise FrameChanged(
                    f"UART0 sends at {baud:.0f} baud (core clock {self.sclk_hz()} Hz, CLK_CONF "
                    f"{self.clk_conf:#010x}, CLKDIV {self.clkdiv:#010x}): a terminal at 115200 "
                    "would show garbage")
            self.bauds.add(round(baud))
            self.out(value & 0xFF)
        elif off == self.INT_ENA:
            self.int_ena = value
        elif off == self.INT_CLR:
            pass  # both modelled interrupts are levels: they stay while their condition does
        elif off == self.CONF0:
            self.conf0 = value
        elif off == self.CONF1:
            self.conf1 = value
        elif off == self.CLKDIV:
            self.clkdiv = value
        elif off == self.CLK_CONF:
            self.clk_conf = value
        else:
            super().write(off, value)

    def levels(self):
        return {self.SOURCE: bool(self._raw() & self.int_ena)}


class WatchdogExpired(Exception):
    """A watchdog left running reached its timeout: the chip would reset."""


class Watchdog:
    """One watchdog's enable bit behind its write-protect key (TRM 13.2.2): its
    config register changes only while the protect register holds the key. Left
    enabled, it expires `timeout_seconds` of simulated time after reset (the ROM's
    flash-boot timeouts are on the order of a second; the model uses one second for
    each)."""

    def __init__(self, name, key, config, enable_bit, timeout_seconds=1.0):
        self.name, self.key = name, key
        self.config, self.enable_bit = config, enable_bit
        self.protect = 0
        self.timeout_seconds = timeout_seconds

    def write_config(self, value):
        if self.protect == self.key:
            self.config = value

    def check(self, seconds):
        if self.config & self.enable_bit and seconds >= self.timeout_seconds:
            raise WatchdogExpired(
                f"{self.name} expired at {seconds:.3f} s: the chip would reset "
                "(it was never disabled with its key)"
            )


WDT_WKEY = 0x50D8_3AA1
SWD_WKEY = 0x8F1D_312A


class RtcCntl(Device):
    """RTC_CNTL: the RTC watchdog (WDTCONFIG0 0x90, WDTWPROTECT 0xA8), the super
    watchdog (SWD_CONF 0xAC, SWD_WPROTECT 0xB0; it expires unless auto-feed is on),
    the brown-out detector (BROWN_OUT 0xD8: RST_ENA bit 26, ANA_RST_EN bit 28, ENA bit
    30, DET bit 31; FIB_SEL 0x10C, reset 7, whose bit 1 set leaves the analog
    brown-out reset on the chip's fixed signal, taken here as armed), the RTC interrupt
    registers (INT_ENA 0x40, INT_RAW 0x44, INT_ST 0x48, INT_CLR 0x4C; BROWN_OUT_INT bit
    9) and OPTIONS0 (0x00; BB_I2C_FORCE_PD bit 6, BBPLL_I2C_FORCE_PD bit 8,
    BBPLL_FORCE_PD bit 10: `bbpll_powered()`, reset 0). Source 27. `brown_out()` is the
    supply falling below the threshold: a chip reset if any of the three resets is
    armed, else the interrupt."""

    name, base, size = "RTC_CNTL", 0x6000_8000, 0x1000
    SOURCE = 27
    OPTIONS0, INT_ENA, INT_RAW, INT_ST, INT_CLR = 0x00, 0x40, 0x44, 0x48, 0x4C
    BBPLL_POWER_DOWN = 1 << 6 | 1 << 8 | 1 << 10
    WDTCONFIG0, WDTWPROTECT, SWD_CONF, SWD_WPROTECT = 0x90, 0xA8, 0xAC, 0xB0
    BROWN_OUT, FIB_SEL = 0xD8, 0x10C
    BROWN_OUT_INT = 1 << 9
    BROWN_OUT_RST_ENA, BROWN_OUT_ANA_RST_EN = 1 << 26, 1 << 28
    BROWN_OUT_ENA, BROWN_OUT_DET = 1 << 30, 1 << 31
    FIB_BOD_RST = 1 << 1

    class BrownOutReset(Exception):
        pass

    def __init__(self):
        # As the ROM leaves them: RWDT on in flash-boot mode; SWD not fed.
        self.rwdt = Watchdog("RTC watchdog (RWDT)", WDT_WKEY, 0x8000_1000 | 0x200, 1 << 31)
        self.swd = Watchdog("super watchdog (SWD)", SWD_WKEY, 0x4B00_0000, 0)
        self.int_ena = 0
        self.int_raw = 0
        self.brown_out_reg = self.BROWN_OUT_RST_ENA | 0x3FF
        self.fib_sel = 0b111
        self.below_threshold = False
        self.options0 = 0

    def bbpll_powered(self):
        return not self.options0 & self.BBPLL_POWER_DOWN

    def check(self, seconds):
        self.rwdt.check(seconds)
        if not self.swd.config >> 31 and seconds >= self.swd.timeout_seconds:
            raise WatchdogExpired(
                f"super watchdog (SWD) expired at {seconds:.3f} s: auto-feed was never set"
            )

    def brown_out(self):
        """The supply falls below the threshold and stays there: the detector, once
        on, raises its interrupt, or resets the chip when its reset is enabled."""
        self.below_threshold = True
        self._detect()

    def _detect(self):
        if not self.below_threshold or not self.brown_out_reg & self.BROWN_OUT_ENA:
            return
        if self.brown_out_reg & self.BROWN_OUT_RST_ENA:
            raise self.BrownOutReset("brown-out with its chip reset enabled: the chip resets")
        if self.fib_sel & self.FIB_BOD_RST or self.brown_out_reg & self.BROWN_OUT_ANA_RST_EN:
            raise self.BrownOutReset(
                "brown-out with its analog reset armed (FIB_SEL bit 1 or BROWN_OUT_ANA_RST_EN): "
                "the chip resets")
        self.int_raw |= self.BROWN_OUT_INT

    def read(self, off):
        regs = {
            self.OPTIONS0: self.options0,
            self.INT_ENA: self.int_ena,
            self.INT_RAW: self.int_raw,
            self.INT_ST: self.int_raw & self.int_ena,
            self.WDTCONFIG0: self.rwdt.config,
            self.WDTWPROTECT: self.rwdt.protect,
            self.SWD_CONF: self.swd.config,
            self.SWD_WPROTECT: self.swd.protect,
            self.BROWN_OUT: self.brown_out_reg
            | (self.BROWN_OUT_DET if self.below_threshold else 0),
            self.FIB_SEL: self.fib_sel,
        }
        if off not in regs:
            return super().read(off)
        return regs[off]

    def write(self, off, value):
        if off == self.OPTIONS0:
            self.options0 = value
        elif off == self.INT_ENA:
            self.int_ena = value
        elif off == self.INT_CLR:
            self.int_raw &= ~value
            # The detector keeps raising it while the supply stays below the threshold.
            self._detect()
        elif off == self.WDTCONFIG0:
            self.rwdt.write_config(value)
        elif off == self.WDTWPROTECT:
            self.rwdt.protect = value
        elif off == self.SWD_CONF:
            self.swd.write_config(value)
        elif off == self.SWD_WPROTECT:
            self.swd.protect = value
        elif off == self.BROWN_OUT:
            self.brown_out_reg = value & ~self.BROWN_OUT_DET
            self._detect()
        elif off == self.FIB_SEL:
            self.fib_sel = value & 0b111
        else:
            super().write(off, value)

    def levels(self):
        return {self.SOURCE: bool(self.int_raw & self.int_ena)}


class TimerGroup(Device):
    """A timer group's main watchdog (WDTCONFIG0 +0x48, WDTWPROTECT +0x64; enable bit
    31). The timers themselves are not modelled."""

    WDTCONFIG0, WDTWPROTECT = 0x48, 0x64

    def __init__(self, index):
        self.name = f"TIMG{index}"
        self.base = (0x6001_F000, 0x6002_0000)[index]
        self.size = 0x1000
        self.wdt = Watchdog(f"MWDT{index}", WDT_WKEY, 0x8000_4000, 1 << 31)

    def read(self, off):
        if off == self.WDTCONFIG0:
            return self.wdt.config
        if off == self.WDTWPROTECT:
            return self.wdt.protect
        return super().read(off)

    def write(self, off, value):
        if off == self.WDTCONFIG0:
            # WDT_CONF_UPDATE_EN (bit 22) latches and reads back set, as the fake does.
            self.wdt.write_config(value)
        elif off == self.WDTWPROTECT:
            self.wdt.protect = value
        else:
            super().write(off, value)


class Systimer(Device):
    """SYSTIMER (TRM 10.4/10.5): UNIT0 counts at 16 MHz from reset (the Timebase's
    counts: CPU cycles / 5 at 80 MHz, / 10 at 160 MHz); UNIT0_OP's update latches the count into VALUE_HI/LO and sets
    VALUE_VALID; COMP0 in period mode (TARGET0_CONF bit 30) raises TARGET0 (INT_RAW bit
    0, source 37) every `period` counts from the COMP0_LOAD, while CONF.TARGET0_WORK_EN
    is set. One-shot mode and UNIT1/COMP1/COMP2 are not modelled."""

    name, base, size = "SYSTIMER", 0x6002_3000, 0x1000
    SOURCE = 37
    CONF, UNIT0_OP, TARGET0_CONF = 0x00, 0x04, 0x34
    UNIT0_VALUE_HI, UNIT0_VALUE_LO, COMP0_LOAD = 0x40, 0x44, 0x50
    INT_ENA, INT_RAW, INT_CLR, INT_ST = 0x64, 0x68, 0x6C, 0x70
    TARGET0_WORK_EN, UNIT0_WORK_EN = 1 << 24, 1 << 30
    UNIT0_UPDATE, UNIT0_VALUE_VALID = 1 << 30, 1 << 29
    PERIOD_MODE = 1 << 30

    def __init__(self, timebase):
        self.timebase = timebase
        self.conf = self.UNIT0_WORK_EN | 1
        self.latched = 0
        self.valid = False
        self.target0_conf = 0
        self.loaded_period = 0
        self.next_alarm = None  # in counts
        self.int_ena = 0
        self.int_raw = 0

    def count(self):
        return self.timebase.counts()

    def update(self):
        """Raises TARGET0 for every alarm time passed (period mode re-arms)."""
        if self.next_alarm is None or not self.conf & self.TARGET0_WORK_EN:
            return
        now = self.count()
        if now >= self.next_alarm:
            self.int_raw |= 1
            if self.loaded_period:
                passed = (now - self.next_alarm) // self.loaded_period + 1
                self.next_alarm += passed * self.loaded_period
            else:
                self.next_alarm = None

    def next_event_cycles(self):
        """The CPU cycle of the next alarm, or None."""
        if self.next_alarm is None or not self.conf & self.TARGET0_WORK_EN:
            return None
        return self.timebase.cycle_of(self.next_alarm)

    def read(self, off):
        if off == self.CONF:
            return self.conf
        if off == self.UNIT0_OP:
            return self.UNIT0_VALUE_VALID if self.valid else 0
        if off == self.TARGET0_CONF:
            return self.target0_conf
        if off == self.UNIT0_VALUE_HI:
            return self.latched >> 32
        if off == self.UNIT0_VALUE_LO:
            return self.latched & 0xFFFF_FFFF
        if off == self.INT_ENA:
            return self.int_ena
        if off == self.INT_RAW:
            self.update()
            return self.int_raw
        if off == self.INT_ST:
            self.update()
            return self.int_raw & self.int_ena
        return super().read(off)

    def write(self, off, value):
        if off == self.CONF:
            self.conf = value
        elif off == self.UNIT0_OP:
            if value & self.UNIT0_UPDATE:
                self.latched = self.count() & ((1 << 52) - 1)
                self.valid = True
        elif off == self.TARGET0_CONF:
            self.target0_conf = value
        elif off == self.COMP0_LOAD:
            if value & 1:
                period = self.target0_conf & ((1 << 26) - 1)
                if self.target0_conf & self.PERIOD_MODE and period:
                    self.loaded_period = period
                    self.next_alarm = self.count() + period
                else:
                    raise Undecoded(self.base + off, "COMP0 load of a one-shot alarm (not modelled)")
        elif off == self.INT_ENA:
            self.int_ena = value
        elif off == self.INT_CLR:
            self.int_raw &= ~value
        else:
            super().write(off, value)

    def levels(self):
        self.update()
        return {self.SOURCE: bool(self.int_raw & self.int_ena & 1)}


class IntMatrix(Device):
    """The interrupt matrix (TRM 8.3/8.4): 62 source map registers (line 0 = not
    connected), CPU_INT_ENABLE, CPU_INT_TYPE (1 = edge), CPU_INT_CLEAR, the priorities
    of lines 1..31 and CPU_INT_THRESH. `line_to_take(levels)` is the line the CPU takes:
    enabled, pending (level now, or an edge latched until cleared), priority above the
    threshold; the highest priority wins, then the lowest line."""

    name, base, size = "interrupt matrix", 0x600C_2000, 0x1000
    SOURCES, LINES = 62, 32
    ENABLE, TYPE, CLEAR, THRESH = 0x104, 0x108, 0x10C, 0x194
    PRI0 = 0x114

    def __init__(self):
        self.map = [0] * self.SOURCES
        self.enable = 0
        self.type = 0
        self.clear = 0
        self.priority = [0] * self.LINES
        self.thresh = 0
        self.edge_latched = 0
        self.last_levels = 0

    def read(self, off):
        if off < 4 * self.SOURCES and off % 4 == 0:
            return self.map[off // 4]
        if off == self.ENABLE:
            return self.enable
        if off == self.TYPE:
            return self.type
        if off == self.CLEAR:
            return self.clear
        if off == self.THRESH:
            return self.thresh
        if self.PRI0 <= off < self.PRI0 + 4 * self.LINES and off % 4 == 0:
            return self.priority[(off - self.PRI0) // 4]
        return super().read(off)

    def write(self, off, value):
        if off < 4 * self.SOURCES and off % 4 == 0:
            self.map[off // 4] = value & 0x1F
        elif off == self.ENABLE:
            self.enable = value & ~1
        elif off == self.TYPE:
            self.type = value
        elif off == self.CLEAR:
            self.edge_latched &= ~value
            self.clear = value
        elif off == self.THRESH:
            self.thresh = value & 0xF
        elif self.PRI0 <= off < self.PRI0 + 4 * self.LINES and off % 4 == 0:
            self.priority[(off - self.PRI0) // 4] = value & 0xF
        else:
            super().write(off, value)

    def line_to_take(self, levels):
        asserted = 0
        for source, level in levels.items():
            line = self.map[source]
            if level and line:
                asserted |= 1 << line
        rising = asserted & ~self.last_levels
        self.last_levels = asserted
        self.edge_latched |= rising & self.type
        pending = (asserted & ~self.type) | self.edge_latched
        best = None
        for line in range(1, self.LINES):
            if not (pending >> line) & 1 or not (self.enable >> line) & 1:
                continue
            pri = self.priority[line]
            if pri <= self.thresh:
                continue
            if best is None or pri > self.priority[best]:
                best = line
        return best


class Gpio(Device):
    """GPIO: OUT (0x04) with W1TS/W1TC (0x08/0x0C), ENABLE (0x20) with W1TS/W1TC
    (0x24/0x28), FUNCm_IN_SEL_CFG (0x154 + 4m, 128 signals) and FUNCn_OUT_SEL_CFG
    (0x554 + 4n, 22 pins). `level(pin)` is what an output pin drives. Interrupts
    (the comparator input): PINn_REG (0x74 + 4n; INT_TYPE bits 9:7, only 0 and 2 =
    falling edge modelled, any other type stops the run; INT_ENA bit 13 = the CPU
    interrupt), STATUS (0x44) with W1TS/W1TC (0x48/0x4C), PCPU_INT (0x5C). A falling
    edge that `drive_input` makes on a pin whose output is off and whose IO MUX input
    is enabled sets its STATUS bit; source 16 is raised while an enabled pin's STATUS
    bit is set (cleared only by W1TC)."""

    name, base, size = "GPIO", 0x6000_4000, 0x1000
    OUT, OUT_W1TS, OUT_W1TC = 0x04, 0x08, 0x0C
    ENABLE, ENABLE_W1TS, ENABLE_W1TC = 0x20, 0x24, 0x28
    STATUS, STATUS_W1TS, STATUS_W1TC, PCPU_INT = 0x44, 0x48, 0x4C, 0x5C
    PIN0 = 0x74
    IN_SEL0, SIGNALS = 0x154, 128
    OUT_SEL0, PINS = 0x554, 22
    SIMPLE_OUTPUT = 0x80
    SOURCE = 16
    INT_TYPE_SHIFT, FALLING_EDGE, INT_ENA_CPU = 7, 2, 1 << 13
    FUN_IE = 1 << 9

    def __init__(self, io_mux=None):
        self.out = 0
        self.enable = 0
        self.in_sel = [0] * self.SIGNALS
        self.out_sel = [self.SIMPLE_OUTPUT] * self.PINS
        self.pin_conf = [0] * self.PINS
        self.status = 0
        self.inputs = (1 << self.PINS) - 1  # every input high (pulled up)
        self.io_mux = io_mux

    def _enabled_irqs(self):
        return sum(1 << n for n, c in enumerate(self.pin_conf) if c & self.INT_ENA_CPU)

    def drive_input(self, pin, level):
        """What the outside world drives on `pin` (the comparator: high while the
        supply is good, low when it falls below the threshold)."""
        was = (self.inputs >> pin) & 1
        self.inputs = (self.inputs & ~(1 << pin)) | (int(bool(level)) << pin)
        falling = was and not level
        ie = self.io_mux is None or self.io_mux.regs[0x04 + 4 * pin] & self.FUN_IE
        is_input = not (self.enable >> pin) & 1
        kind = (self.pin_conf[pin] >> self.INT_TYPE_SHIFT) & 7
        if falling and ie and is_input and kind == self.FALLING_EDGE:
            self.status |= 1 << pin

    def levels(self):
        return {self.SOURCE: bool(self.status & self._enabled_irqs())}

    def level(self, pin):
        """The pin's level as an output (high when not driven: pulled up)."""
        driven = (self.enable >> pin) & 1 and self.out_sel[pin] == self.SIMPLE_OUTPUT
        return bool((self.out >> pin) & 1) if driven else True

    def read(self, off):
        if off == self.OUT:
            return self.out
        if off == self.ENABLE:
            return self.enable
        if off == self.STATUS:
            return self.status
        if off == self.PCPU_INT:
            return self.status & self._enabled_irqs()
        if self.PIN0 <= off < self.PIN0 + 4 * self.PINS and off % 4 == 0:
            return self.pin_conf[(off - self.PIN0) // 4]
        if self.IN_SEL0 <= off < self.IN_SEL0 + 4 * self.SIGNALS and off % 4 == 0:
            return self.in_sel[(off - self.IN_SEL0) // 4]
        if self.OUT_SEL0 <= off < self.OUT_SEL0 + 4 * self.PINS and off % 4 == 0:
            return self.out_sel[(off - self.OUT_SEL0) // 4]
        return super().read(off)

    def write(self, off, value):
        mask = (1 << self.PINS) - 1
        if off == self.OUT:
            self.out = value & mask
        elif off == self.OUT_W1TS:
            self.out |= value & mask
        elif off == self.OUT_W1TC:
            self.out &= ~value
        elif off == self.ENABLE:
            self.enable = value & mask
        elif off == self.ENABLE_W1TS:
            self.enable |= value & mask
        elif off == self.ENABLE_W1TC:
            self.enable &= ~value
        elif off == self.STATUS:
            self.status = value & mask
        elif off == self.STATUS_W1TS:
            self.status |= value & mask
        elif off == self.STATUS_W1TC:
            self.status &= ~value
        elif self.PIN0 <= off < self.PIN0 + 4 * self.PINS and off % 4 == 0:
            kind = (value >> self.INT_TYPE_SHIFT) & 7
            if kind not in (0, self.FALLING_EDGE):
                raise Undecoded(self.base + off, f"GPIO interrupt type {kind} (only falling edge is modelled)")
            self.pin_conf[(off - self.PIN0) // 4] = value
        elif self.IN_SEL0 <= off < self.IN_SEL0 + 4 * self.SIGNALS and off % 4 == 0:
            self.in_sel[(off - self.IN_SEL0) // 4] = value
        elif self.OUT_SEL0 <= off < self.OUT_SEL0 + 4 * self.PINS and off % 4 == 0:
            self.out_sel[(off - self.OUT_SEL0) // 4] = value
        else:
            super().write(off, value)


def io_mux():
    """IO_MUX_GPIOn (0x04 + 4n) for the 22 pins: function select and input enable,
    held as written (the routing that matters is checked in Gpio and Spi2)."""
    return Plain("IO MUX", 0x6000_9000, {0x04 + 4 * n: 0x0800 for n in range(22)})


class ClockRefused(Exception):
    """A clock change the chip would not survive, or that the model cannot follow."""


class Analog:
    """The analog registers behind the internal I2C bus that the board writes through
    the ROM's `rom_i2c_writeReg` and `rom_i2c_writeReg_Mask` (machine.py calls these
    for the ROM functions): by (block, register), one byte each. The BBPLL (block 0x66)
    answers only while ANA_CONFIG's bit 17 enables its master (`master_on`); a write
    while it is off would be lost, so it stops the run. Its configuration for 480 MHz
    from a 40 MHz crystal is what esp-idf's `clk_ll_bbpll_set_config` leaves
    (`BBPLL_480`, register -> (mask, value)); nothing is known of the chip's reset
    values, so a switch to the PLL needs that configuration written since reset
    (`bbpll_configured`) unless the PLL already ran (`configured`)."""

    BBPLL, DIG_REG = 0x66, 0x6D
    BBPLL_480 = {2: (0xFF, 0x50), 3: (0xFF, 0x08), 4: (0xFF, 0x6B), 5: (0x77, 0x00),
                 6: (0xFF, 0x63), 9: (0x03, 0x02)}

    def __init__(self, master_on, configured=False):
        self.regs = {}
        self.master_on = master_on
        self.configured = configured
        self.writes = []

    def write_mask(self, block, host, reg, msb, lsb, value):
        if host != 0:
            raise ClockRefused(f"analog I2C write to block {block:#x} with host id {host} (the C3's is 0)")
        if msb < lsb or msb > 7:
            raise ClockRefused(f"analog I2C write of bits {msb}..{lsb} of block {block:#x} register {reg}")
        if block == self.BBPLL and not self.master_on():
            raise ClockRefused("analog I2C write to the BBPLL with its master off (ANA_CONFIG bit 17 "
                               "set): the write would be lost")
        mask = ((1 << (msb - lsb + 1)) - 1) << lsb
        old = self.regs.get((block, reg), 0)
        self.regs[(block, reg)] = (old & ~mask) | ((value << lsb) & mask)
        self.writes.append((block, reg, msb, lsb, value))

    def bbpll_configured(self):
        return self.configured or all(
            self.regs.get((self.BBPLL, reg), None) is not None
            and self.regs[(self.BBPLL, reg)] & mask == value
            for reg, (mask, value) in self.BBPLL_480.items())


class AnaMaster(Plain):
    """The analog I2C master's registers: I2C_MST_ANA_CONF0 (0x40; BBPLL_STOP_FORCE_HIGH
    bit 2, BBPLL_STOP_FORCE_LOW bit 3: high cleared and low set start the BBPLL's
    calibration), ANA_CONFIG (0x44; bits 17:8 gate the masters, set = off, bit 17 the
    BBPLL's) and ANA_CONFIG2 (0x48), held as written (reset 0: every master on)."""

    def __init__(self):
        super().__init__("analog I2C master", 0x6000_E000, {0x40: 0, 0x44: 0, 0x48: 0})

    def bbpll_master_on(self):
        return not self.regs[0x44] & (1 << 17)

    def bbpll_calibrating(self):
        return self.regs[0x40] & 0b1100 == 0b1000


class System(Plain):
    """SYSTEM: PERIP_CLK_EN0 (0x10) and PERIP_RST_EN0 (0x18) as plain registers, and
    the CPU clock (TRM 6.2): CPU_PER_CONF (0x08; CPUPERIOD_SEL bits 1:0, PLL_FREQ_SEL
    bit 2, CPU_WAIT_MODE_FORCE_ON bit 3, CPU_WAITI_DELAY_NUM bits 7:4) and SYSCLK_CONF
    (0x58; PRE_DIV_CNT bits 9:0, SOC_CLK_SEL bits 11:10, CLK_XTAL_FREQ bits 18:12
    read-only). They start as the ROM leaves them after a power-on reset (the crystal,
    undivided: 40 MHz) or, with `rom_on_pll`, as a firmware that ran on the PLL left
    them (80 MHz from the 480 MHz PLL). The CPU runs from XTAL / (PRE_DIV_CNT + 1) or
    from the PLL at 80 or 160 MHz (CPUPERIOD_SEL); APB is the CPU clock on XTAL and 80
    MHz on the PLL. A switch to the PLL stops the run (ClockRefused) unless the BBPLL is
    powered (RTC_CNTL OPTIONS0), at 480 MHz (PLL_FREQ_SEL), configured (`analog`) and
    its calibration started; so do a reserved CPUPERIOD_SEL or source (RC_FAST is not
    modelled), a PLL_FREQ_SEL change while the PLL runs the CPU, a change of the
    read-only crystal field, and any change of the wait-mode bits. A change of CPU_CLK
    is passed to the Timebase."""

    CPU_PER_CONF, SYSCLK_CONF = 0x08, 0x58
    CPUPERIOD_SEL, PLL_FREQ_SEL = 0b11, 1 << 2
    CPU_PER_CONF_BITS = 0xFF
    SOC_CLK_SEL_SHIFT, XTAL, PLL = 10, 0, 1
    XTAL_FREQ_FIELD = 0x7F << 12

    def __init__(self, timebase=None, rom_on_pll=False, rtc=None, ana=None, analog=None):
        super().__init__("SYSTEM", 0x600C_0000, {0x10: 0xF9C1_E06F, 0x18: 0})
        self.timebase = timebase
        self.rtc, self.ana, self.analog = rtc, ana, analog
        self.cpu_per_conf = 0x0000_000C
        self.sysclk_conf = (40 << 12) | ((self.PLL << 10 | 1) if rom_on_pll else 0)
        self.clock_writes = []

    def on_pll(self):
        return (self.sysclk_conf >> self.SOC_CLK_SEL_SHIFT) & 3 == self.PLL

    def cpu_hz(self):
        return self._cpu_hz(self.cpu_per_conf, self.sysclk_conf)

    def _cpu_hz(self, per_conf, sysclk):
        if (sysclk >> self.SOC_CLK_SEL_SHIFT) & 3 == self.XTAL:
            return XTAL_HZ // ((sysclk & 0x3FF) + 1)
        return 160_000_000 if per_conf & self.CPUPERIOD_SEL == 1 else 80_000_000

    def apb_hz(self):
        return APB_HZ_ON_PLL if self.on_pll() else self.cpu_hz()

    def read(self, off):
        if off == self.CPU_PER_CONF:
            return self.cpu_per_conf
        if off == self.SYSCLK_CONF:
            return self.sysclk_conf
        return super().read(off)

    def write(self, off, value):
        if off == self.CPU_PER_CONF:
            self._set(value, self.sysclk_conf, f"SYSTEM_CPU_PER_CONF_REG written {value:#010x}")
        elif off == self.SYSCLK_CONF:
            self._set(self.cpu_per_conf, value, f"SYSTEM_SYSCLK_CONF_REG written {value:#010x}")
        else:
            super().write(off, value)

    def _set(self, per_conf, sysclk, what):
        why = None
        src = (sysclk >> self.SOC_CLK_SEL_SHIFT) & 3
        if per_conf & ~self.CPU_PER_CONF_BITS or sysclk & ~0x7_FFFF:
            why = "reserved bits set"
        elif per_conf & self.CPUPERIOD_SEL > 1:
            why = f"CPUPERIOD_SEL {per_conf & self.CPUPERIOD_SEL} is reserved (0: 80 MHz, 1: 160 MHz)"
        elif (per_conf ^ self.cpu_per_conf) & ~(self.CPUPERIOD_SEL | self.PLL_FREQ_SEL):
            why = "CPU_WAIT_MODE_FORCE_ON or CPU_WAITI_DELAY_NUM changed"
        elif (sysclk ^ self.sysclk_conf) & self.XTAL_FREQ_FIELD:
            why = "CLK_XTAL_FREQ is read-only"
        elif src not in (self.XTAL, self.PLL):
            why = f"SOC_CLK_SEL {src} (RC_FAST and the reserved value are not modelled)"
        elif (per_conf ^ self.cpu_per_conf) & self.PLL_FREQ_SEL and self.on_pll():
            why = "PLL_FREQ_SEL changed while the CPU runs from the PLL"
        elif src == self.PLL and not self.on_pll():
            missing = []
            if self.rtc is not None and not self.rtc.bbpll_powered():
                missing.append("the BBPLL is powered down (RTC_CNTL_OPTIONS0)")
            if not per_conf & self.PLL_FREQ_SEL:
                missing.append("PLL_FREQ_SEL says 320 MHz (the model knows 480 MHz only)")
            if self.analog is not None and not self.analog.bbpll_configured():
                missing.append("the BBPLL's analog registers are not set for 480 MHz from 40 MHz")
            if self.ana is not None and not (self.analog.configured or self.ana.bbpll_calibrating()):
                missing.append("its calibration was not started (I2C_MST_ANA_CONF0)")
            if missing:
                why = "the CPU switched to the PLL, but " + "; ".join(missing)
        if why:
            raise ClockRefused(f"{what} (CPU_PER_CONF {self.cpu_per_conf:#x}, SYSCLK_CONF "
                               f"{self.sysclk_conf:#x}): {why}")
        before = self.cpu_hz()
        self.cpu_per_conf, self.sysclk_conf = per_conf, sysclk
        self.clock_writes.append((per_conf, sysclk))
        if self.cpu_hz() != before and self.timebase is not None:
            self.timebase.set_cpu_hz(self.cpu_hz())


def system(timebase=None, rom_on_pll=False, rtc=None, ana=None, analog=None):
    return System(timebase, rom_on_pll, rtc, ana, analog)


class Mb85rs4mt:
    """The Fujitsu MB85RS4MT, 512 KiB SPI FRAM (datasheet: opcodes WREN 06, WRDI 04,
    RDSR 05, WRSR 01, READ 03, WRITE 02, RDID 9F; 3-byte addresses wrapping at 512 KiB;
    WEL cleared at the end of WRITE or WRSR). `array` is any mutable buffer of 512 KiB
    (machine.py passes a memory-mapped host file, so writes persist as they happen).
    One command per chip-select low period."""

    SIZE = 512 * 1024
    RDID = bytes([0x04, 0x7F, 0x49, 0x03])
    # The MB85RS4MTY, the high-temperature variant: the same chip to the driver.
    RDID_Y = bytes([0x04, 0x7F, 0x49, 0x0B])

    def __init__(self, array, rdid=RDID):
        if len(array) != self.SIZE:
            raise ValueError(f"MB85RS4MT array is {self.SIZE} bytes, not {len(array)}")
        self.array = array
        self.rdid = bytes(rdid)
        self.wel = False
        self.status = 0
        self._cmd = None
        self._pos = 0
        self._addr = 0
        self.bytes_written = 0

    def select(self):
        self._cmd, self._pos, self._addr = None, 0, 0

    def deselect(self):
        if self._cmd in (0x02, 0x01) and self._pos > (4 if self._cmd == 0x02 else 1):
            self.wel = False
        self._cmd = None

    def exchange(self, byte):
        """One byte in on SI, the byte out on SO."""
        pos = self._pos
        self._pos += 1
        if pos == 0:
            self._cmd = byte
            if byte == 0x06:
                self.wel = True
            elif byte == 0x04:
                self.wel = False
            return 0xFF
        cmd = self._cmd
        if cmd == 0x05:
            return self.status | (0x02 if self.wel else 0)
        if cmd == 0x9F:
            return self.rdid[pos - 1] if pos - 1 < len(self.rdid) else 0xFF
        if cmd == 0x01:
            if pos == 1 and self.wel:
                self.status = byte & 0x8C
            return 0xFF
        if cmd in (0x02, 0x03):
            if pos <= 3:
                self._addr = ((self._addr << 8) | byte) & (self.SIZE - 1)
                return 0xFF
            addr = self._addr
            self._addr = (addr + 1) & (self.SIZE - 1)
            if cmd == 0x03:
                return self.array[addr]
            if self.wel:
                self.array[addr] = byte
                self.bytes_written += 1
            return 0xFF
        return 0xFF


class Spi2(Device):
    """GP-SPI2 in CPU-controlled full-duplex master mode (TRM 26.5.8): CMD.UPDATE
    (bit 23) completes at once; CMD.USR (bit 24) shifts MS_DLEN + 1 bits (whole bytes)
    out of W0..W15, little-endian, through the device whose chip select is low, and puts
    what came back in the same buffer. The configuration registers are held as
    written; a transfer is refused unless the controller's clock is on
    (SYSTEM_PERIP_CLK_EN0 bit 6 and CLK_GATE) and the pins are routed as the board
    wires them (`pins`: SCK, MISO, MOSI, CS; the paper's board by default: SCK GPIO6,
    MISO GPIO2, MOSI GPIO7, CS GPIO1 a plain output)."""

    name, base, size = "GP-SPI2", 0x6002_4000, 0x1000
    CMD, CLOCK, USER, MS_DLEN, MISC, DMA_CONF = 0x00, 0x0C, 0x10, 0x1C, 0x20, 0x30
    W0, SLAVE, CLK_GATE = 0x98, 0xE0, 0xE8
    CMD_UPDATE, CMD_USR = 1 << 23, 1 << 24
    FSPICLK_OUT, FSPIQ_IN, FSPID_OUT = 63, 64, 65

    class Miswired(Exception):
        pass

    def __init__(self, gpio, system_regs, fram, pins=PAPER_PINS):
        self.gpio, self.system, self.fram = gpio, system_regs, fram
        self.pin_sck, self.pin_miso, self.pin_mosi, self.pin_cs = pins
        self.regs = {self.CLOCK: 0x8000_3043, self.USER: 0x8000_00C0, self.MS_DLEN: 0,
                     self.MISC: 0x3E, self.DMA_CONF: 0, self.SLAVE: 0x0280_0000,
                     self.CLK_GATE: 0}
        self.w = [0] * 16
        self.cs_was_low = False
        self.transactions = 0

    def _check_wiring(self):
        g = self.gpio
        problems = []
        if not self.system.regs[0x10] & (1 << 6):
            problems.append("SPI2 clock off in SYSTEM_PERIP_CLK_EN0")
        if self.system.regs[0x18] & (1 << 6):
            problems.append("SPI2 held in reset")
        if self.regs[self.CLK_GATE] & 0b11 != 0b11:
            problems.append("CLK_GATE off")
        if g.out_sel[self.pin_sck] != self.FSPICLK_OUT or not (g.enable >> self.pin_sck) & 1:
            problems.append(f"GPIO{self.pin_sck} (SCK) is not FSPICLK")
        if g.out_sel[self.pin_mosi] != self.FSPID_OUT or not (g.enable >> self.pin_mosi) & 1:
            problems.append(f"GPIO{self.pin_mosi} (MOSI) is not FSPID")
        if g.in_sel[self.FSPIQ_IN] != (0x40 | self.pin_miso):
            problems.append(f"FSPIQ is not fed from GPIO{self.pin_miso} (MISO)")
        if problems:
            raise self.Miswired("GP-SPI2 transfer: " + ", ".join(problems))

    def chip_select_changed(self):
        """Called on every GPIO write: a CS edge starts or ends a command."""
        low = not self.gpio.level(self.pin_cs)
        if low and not self.cs_was_low:
            self.fram.select()
        elif not low and self.cs_was_low:
            self.fram.deselect()
        self.cs_was_low = low

    def read(self, off):
        if off == self.CMD:
            return 0
        if self.W0 <= off < self.W0 + 64 and off % 4 == 0:
            return self.w[(off - self.W0) // 4]
        if off in self.regs:
            return self.regs[off]
        return super().read(off)

    def write(self, off, value):
        if off == self.CMD:
            if value & self.CMD_USR:
                self._transfer()
        elif self.W0 <= off < self.W0 + 64 and off % 4 == 0:
            self.w[(off - self.W0) // 4] = value
        elif off in self.regs:
            self.regs[off] = value
        else:
            super().write(off, value)

    def _transfer(self):
        self._check_wiring()
        bits = (self.regs[self.MS_DLEN] & 0x3FFFF) + 1
        if bits % 8 or bits > 512:
            raise Undecoded(self.base + self.MS_DLEN, f"a {bits}-bit SPI transfer (whole bytes up to 64 are modelled)")
        data = b"".join(w.to_bytes(4, "little") for w in self.w)[: bits // 8]
        if self.cs_was_low:
            back = bytes(self.fram.exchange(b) for b in data)
        else:
            back = b"\xff" * len(data)  # nobody drives MISO: pulled high
        back = back + bytes(64 - len(back))
        for i in range(len(data) // 4 + (1 if len(data) % 4 else 0)):
            self.w[i] = int.from_bytes(back[4 * i : 4 * i + 4], "little")
        self.transactions += 1
