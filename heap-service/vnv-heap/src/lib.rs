//! vNV-Heap: a virtually non-volatile heap (work in progress, see issue 5).
#![cfg_attr(not(test), no_std)]
