//! Build script: gives the shared library a versioned soname on Linux.
//!
//! The soname is `libagent.so.<major>` (`libagent.so.0` while the version is 0.x). Binaries
//! linked against the build tree (`-Ltarget/<profile> -lagent`, as the tests, the benchmarks and
//! the bindings do) then need `libagent.so.<major>` next to `libagent.so`: this script keeps
//! that symlink in the profile directory (`make install` installs the real versioned file).
//!
//! With the feature `models` it also deflates the model catalogue (src/models/catalogue.jsonl)
//! into OUT_DIR, where src/models.rs embeds it.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "models")]
    deflate_catalogue();
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".into());
    let soname = format!("libagent.so.{major}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");

    // OUT_DIR is <target>/<profile>/build/libagent-<hash>/out: the profile directory, where
    // cargo puts libagent.so, is three levels up.
    let Some(profile_dir) = std::env::var_os("OUT_DIR")
        .map(PathBuf::from)
        .and_then(|out| out.ancestors().nth(3).map(PathBuf::from))
    else {
        return;
    };
    let link = profile_dir.join(&soname);
    if std::fs::symlink_metadata(&link).is_err() {
        // Best effort: a missing link only affects binaries run from the build tree.
        #[cfg(unix)]
        let _ = std::os::unix::fs::symlink("libagent.so", &link);
    }
}

/// src/models/catalogue.jsonl, deflated (raw DEFLATE, best compression) into OUT_DIR.
#[cfg(feature = "models")]
fn deflate_catalogue() {
    let source = "src/models/catalogue.jsonl";
    println!("cargo:rerun-if-changed={source}");
    let text =
        std::fs::read(source).unwrap_or_else(|e| panic!("{source}: {e} (make models writes it)"));
    let deflated = miniz_oxide::deflate::compress_to_vec(&text, 9);
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("catalogue.jsonl.deflate"), deflated).expect("OUT_DIR is writable");
}
