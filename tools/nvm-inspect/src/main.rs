//! `nvm-inspect IMAGE`: prints what an Amber NVM image holds and verifies it.
//! Exit 0 when consistent, 1 with the reasons when not, 2 when the file cannot be read.
//! It never writes to the image.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path] = args.as_slice() else {
        eprintln!("usage: nvm-inspect IMAGE");
        return ExitCode::from(2);
    };
    let image = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("nvm-inspect: cannot read {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let report = nvm_inspect::inspect(&image);
    print!("{}", report.text);
    if report.is_consistent() {
        println!("consistent");
        ExitCode::SUCCESS
    } else {
        for p in &report.problems {
            println!("INCONSISTENT: {p}");
        }
        ExitCode::from(1)
    }
}
