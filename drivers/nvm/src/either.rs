//! One of two NVM devices, chosen at run time (a board's bus, a driver's direct or
//! kernel-mediated store): `Either<L, R>` is an `Nvm` that forwards every call to the
//! device it holds. It must never add behaviour of its own.

use crate::{Nvm, NvmError};

/// The device `L` or the device `R`.
pub enum Either<L, R> {
    Left(L),
    Right(R),
}

impl<L: Nvm, R: Nvm> Nvm for Either<L, R> {
    fn size(&self) -> u32 {
        match self {
            Either::Left(n) => n.size(),
            Either::Right(n) => n.size(),
        }
    }

    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), NvmError> {
        match self {
            Either::Left(n) => n.read(offset, buf),
            Either::Right(n) => n.read(offset, buf),
        }
    }

    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), NvmError> {
        match self {
            Either::Left(n) => n.write(offset, data),
            Either::Right(n) => n.write(offset, data),
        }
    }

    fn fence(&mut self) {
        match self {
            Either::Left(n) => n.fence(),
            Either::Right(n) => n.fence(),
        }
    }

    fn flush(&mut self) -> Result<(), NvmError> {
        match self {
            Either::Left(n) => n.flush(),
            Either::Right(n) => n.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::VecNvm;

    #[test]
    fn each_side_reaches_only_its_own_device() {
        let mut left: Either<VecNvm, VecNvm> = Either::Left(VecNvm::new(8));
        let mut right: Either<VecNvm, VecNvm> = Either::Right(VecNvm::new(16));
        left.write(1, &[7, 7]).unwrap();
        right.write(9, &[5]).unwrap();
        assert_eq!((left.size(), right.size()), (8, 16));
        let mut buf = [0; 3];
        left.read(0, &mut buf).unwrap();
        assert_eq!(buf, [0, 7, 7]);
        assert!(
            left.write(8, &[1]).is_err(),
            "the left device's bounds hold"
        );
        right.read(8, &mut buf).unwrap();
        assert_eq!(buf, [0, 5, 0]);
    }
}
