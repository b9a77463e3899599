//! The guard rules the compiler enforces: each file in `tests/ui` must fail to compile
//! with the error in its `.stderr` file. This test must never accept a program that
//! misuses a guard.

#[test]
fn guard_misuse_is_a_compile_error() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
