//! The interrupt matrix (TRM chapter "Interrupt Matrix", 8.3/8.4): each of the 62
//! peripheral sources is mapped to one of the CPU's interrupt lines 1..=31 (0: not
//! connected); each line has an enable bit, a type (level or edge, edge ones cleared
//! through CPU_INT_CLEAR), a priority 1..=15, and the CPU takes a line only when its
//! priority is above CPU_INT_THRESH. The C3 has no `mie`/`mip`: this is the only mask
//! besides `mstatus.MIE`. Every sequence here ends with a fence (esp-idf fences after
//! its interrupt-controller writes), so that no interrupt is taken on a line in a
//! state older than the one written. Never picks lines or priorities: the board does.

use crate::Regs;

pub const BASE: u32 = 0x600C_2000;
/// INTERRUPT_CORE0_<source>_INTR_MAP: at BASE + 4·source.
pub const fn map_reg(source: u32) -> u32 {
    BASE + 4 * source
}
pub const CPU_INT_ENABLE: u32 = BASE + 0x104;
pub const CPU_INT_TYPE: u32 = BASE + 0x108;
pub const CPU_INT_CLEAR: u32 = BASE + 0x10C;
/// INTERRUPT_CORE0_CPU_INT_PRI_n: at +0x114 + 4·n.
pub const fn priority_reg(line: u32) -> u32 {
    BASE + 0x114 + 4 * line
}
pub const CPU_INT_THRESH: u32 = BASE + 0x194;

/// Peripheral interrupt sources (TRM table "CPU Peripheral Interrupt Configuration").
pub const SOURCES: u32 = 62;
pub const LINES: u32 = 32;
pub const PRIORITY_MAX: u32 = 15;

/// How a line is triggered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    Level,
    Edge,
}

/// A request the matrix has no register for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteError {
    NoSuchSource(u32),
    /// Lines are 1..=31 (0 means "not connected").
    NoSuchLine(u32),
    /// Priorities are 1..=15 (0 never interrupts).
    NoSuchPriority(u32),
}

/// Connects `source` to CPU line `line` with `trigger` and `priority`, and enables
/// the line. Checks every argument before writing anything.
pub fn route(
    r: &mut impl Regs,
    source: u32,
    line: u32,
    trigger: Trigger,
    priority: u32,
) -> Result<(), RouteError> {
    if source >= SOURCES {
        return Err(RouteError::NoSuchSource(source));
    }
    if line == 0 || line >= LINES {
        return Err(RouteError::NoSuchLine(line));
    }
    if priority == 0 || priority > PRIORITY_MAX {
        return Err(RouteError::NoSuchPriority(priority));
    }
    r.write(map_reg(source), line);
    r.modify(CPU_INT_TYPE, |v| match trigger {
        Trigger::Level => v & !(1 << line),
        Trigger::Edge => v | 1 << line,
    });
    r.write(priority_reg(line), priority);
    r.fence();
    r.set_bits(CPU_INT_ENABLE, 1 << line);
    r.fence();
    Ok(())
}

/// Undoes whatever the ROM (or a run before a reset that kept the matrix) left: every
/// source unmapped (line 0), every line disabled, of priority 0 and level-triggered,
/// any pending edge cleared, the threshold 0. After this no interrupt can reach the
/// CPU until [`route`] connects a source.
pub fn reset(r: &mut impl Regs) {
    for source in 0..SOURCES {
        r.write(map_reg(source), 0);
    }
    r.write(CPU_INT_ENABLE, 0);
    r.write(CPU_INT_TYPE, 0);
    for line in 1..LINES {
        r.write(priority_reg(line), 0);
    }
    let all = !1;
    r.write(CPU_INT_CLEAR, all);
    r.write(CPU_INT_CLEAR, 0);
    r.write(CPU_INT_THRESH, 0);
    r.fence();
}

/// Masks or unmasks CPU line `line` (1..=31; others are ignored).
pub fn set_enabled(r: &mut impl Regs, line: u32, enabled: bool) {
    if line == 0 || line >= LINES {
        return;
    }
    if enabled {
        r.set_bits(CPU_INT_ENABLE, 1 << line);
    } else {
        r.clear_bits(CPU_INT_ENABLE, 1 << line);
    }
    r.fence();
}

/// Lines of priority `threshold` or lower no longer interrupt (0: all may).
pub fn set_threshold(r: &mut impl Regs, threshold: u32) {
    r.write(CPU_INT_THRESH, threshold.min(PRIORITY_MAX));
    r.fence();
}

/// Clears the pending state of edge-triggered line `line` (a pulse on its CLEAR bit).
pub fn clear_edge(r: &mut impl Regs, line: u32) {
    if line == 0 || line >= LINES {
        return;
    }
    r.set_bits(CPU_INT_CLEAR, 1 << line);
    r.clear_bits(CPU_INT_CLEAR, 1 << line);
    r.fence();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeRegs;

    #[test]
    fn systimer_and_uart0_routes_write_the_trm_registers() {
        let mut r = FakeRegs::default();
        route(&mut r, 37, 1, Trigger::Edge, 3).unwrap();
        route(&mut r, 21, 2, Trigger::Level, 2).unwrap();
        set_threshold(&mut r, 1);
        assert_eq!(r.get(0x600C_2094), 1, "SYSTIMER_TARGET0 map (source 37)");
        assert_eq!(r.get(0x600C_2054), 2, "UART0 map (source 21)");
        assert_eq!(r.get(0x600C_2104), 0b110, "lines 1 and 2 enabled");
        assert_eq!(r.get(0x600C_2108), 0b010, "line 1 edge, line 2 level");
        assert_eq!(r.get(0x600C_2118), 3, "CPU_INT_PRI_1");
        assert_eq!(r.get(0x600C_211C), 2, "CPU_INT_PRI_2");
        assert_eq!(r.get(0x600C_2194), 1);
        set_enabled(&mut r, 1, false);
        assert_eq!(r.get(0x600C_2104), 0b100);
        assert!(r.fenced(), "a line masked is masked before the next access");
    }

    #[test]
    fn a_route_is_fenced_before_its_line_is_enabled_and_after() {
        let mut r = FakeRegs::default();
        route(&mut r, 27, 3, Trigger::Level, 1).unwrap();
        let enable = r.writes.iter().position(|w| w.0 == 0x600C_2104).unwrap();
        assert_eq!(
            r.fences,
            [enable, enable + 1],
            "map, type and priority are in place before the line is enabled"
        );
    }

    #[test]
    fn reset_unmaps_every_source_and_disables_every_line() {
        // The ROM's leftovers: sources mapped, lines enabled, an edge pending.
        let mut r = FakeRegs::default();
        for source in [5, 21, 37, 61] {
            r.values.insert(0x600C_2000 + 4 * source, 7);
        }
        r.values.insert(0x600C_2104, 0xFFFF_FFFE);
        r.values.insert(0x600C_2108, 1 << 7);
        r.values.insert(0x600C_2194, 5);
        reset(&mut r);
        for source in 0..62 {
            assert_eq!(
                r.get(0x600C_2000 + 4 * source),
                0,
                "source {source} unmapped"
            );
        }
        assert_eq!(r.get(0x600C_2104), 0, "no line enabled");
        assert_eq!(r.get(0x600C_2108), 0, "every line level-triggered");
        assert_eq!(
            r.writes_to(0x600C_210C),
            [0xFFFF_FFFE, 0],
            "pending edges cleared"
        );
        for line in 1..32 {
            assert_eq!(r.get(0x600C_2114 + 4 * line), 0);
        }
        assert_eq!(r.get(0x600C_2194), 0);
        assert!(r.fenced());
        assert_eq!(
            r.writes.iter().filter(|w| w.0 < 0x600C_2100).count(),
            62,
            "each of the 62 sources' map written once, nothing else below ENABLE"
        );
    }

    #[test]
    fn bad_routes_are_refused_before_any_write() {
        let mut r = FakeRegs::default();
        assert_eq!(
            route(&mut r, 62, 1, Trigger::Level, 1),
            Err(RouteError::NoSuchSource(62))
        );
        assert_eq!(
            route(&mut r, 27, 0, Trigger::Level, 1),
            Err(RouteError::NoSuchLine(0))
        );
        assert_eq!(
            route(&mut r, 27, 32, Trigger::Level, 1),
            Err(RouteError::NoSuchLine(32))
        );
        assert_eq!(
            route(&mut r, 27, 3, Trigger::Level, 0),
            Err(RouteError::NoSuchPriority(0))
        );
        assert_eq!(
            route(&mut r, 27, 3, Trigger::Level, 16),
            Err(RouteError::NoSuchPriority(16))
        );
        assert!(r.writes.is_empty());
    }

    #[test]
    fn clearing_an_edge_pulses_its_bit_only() {
        let mut r = FakeRegs::default();
        clear_edge(&mut r, 5);
        assert_eq!(r.writes_to(0x600C_210C), [1 << 5, 0]);
        assert!(r.fenced());
    }
}
