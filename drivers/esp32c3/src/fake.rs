//! Test-only register file: remembers every value and logs every write in order, and
//! lets a test model what the hardware does on a write (a bit that clears itself).

use crate::Regs;
use std::collections::BTreeMap;

type Hook = Box<dyn FnMut(&mut BTreeMap<u32, u32>, u32, u32)>;

#[derive(Default)]
pub struct FakeRegs {
    pub values: BTreeMap<u32, u32>,
    pub writes: Vec<(u32, u32)>,
    /// For each `fence`, how many writes came before it.
    pub fences: Vec<usize>,
    hook: Option<Hook>,
}

impl FakeRegs {
    /// A register file in which `hook` runs after each write (with the values, the
    /// address and the value written) to act as the device would.
    pub fn with_hook(hook: impl FnMut(&mut BTreeMap<u32, u32>, u32, u32) + 'static) -> Self {
        FakeRegs {
            hook: Some(Box::new(hook)),
            ..Default::default()
        }
    }

    pub fn get(&self, addr: u32) -> u32 {
        self.values.get(&addr).copied().unwrap_or(0)
    }

    /// Whether a fence followed the last write (nothing was written after it).
    pub fn fenced(&self) -> bool {
        self.fences.last() == Some(&self.writes.len())
    }

    /// The values written to `addr`, in order.
    pub fn writes_to(&self, addr: u32) -> Vec<u32> {
        self.writes
            .iter()
            .filter(|(a, _)| *a == addr)
            .map(|(_, v)| *v)
            .collect()
    }
}

impl Regs for FakeRegs {
    fn read(&mut self, addr: u32) -> u32 {
        self.get(addr)
    }

    fn write(&mut self, addr: u32, value: u32) {
        self.writes.push((addr, value));
        self.values.insert(addr, value);
        if let Some(hook) = self.hook.as_mut() {
            hook(&mut self.values, addr, value);
        }
    }

    fn fence(&mut self) {
        self.fences.push(self.writes.len());
    }
}
