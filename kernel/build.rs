//! Build script: links the kernel binary with `link.x` when building for the device,
//! and, when `cargo xtask` sets `AMBER_APP` to a generated app description, compiles
//! that app's tasks into the image (`cfg(amber_app)`). It must never change how the
//! host-side library builds.

fn main() {
    println!("cargo:rerun-if-changed=link.x");
    println!("cargo:rerun-if-env-changed=AMBER_APP");
    println!("cargo:rustc-check-cfg=cfg(amber_app)");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("none") {
        return;
    }
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rustc-link-arg-bins=-T{dir}/link.x");
    if let Ok(app) = std::env::var("AMBER_APP") {
        println!("cargo:rerun-if-changed={app}");
        println!("cargo:rustc-cfg=amber_app");
        println!("cargo:rustc-env=AMBER_APP_RS={app}");
    }
}
