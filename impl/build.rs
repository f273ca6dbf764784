//! Records which dynamo-kv-router the extension is built against, read from
//! Cargo.lock, so Python can report it in every artifact and a test can check
//! it against the README's "Production under test" table; and the cargo
//! profile and optimization level it is built with, so a test can check the
//! installed build against the profile pyproject.toml and the README name.

use std::fs;
use std::path::Path;

fn main() {
    // Read at run time, not with `env!`: the build script's binary is shared by
    // every clone that builds in the machine's one target folder, so a path
    // baked in at its compile time would name another clone's lock file.
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let lock_path = Path::new(&manifest_dir).join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock_path.display());
    let lock = fs::read_to_string(&lock_path).unwrap_or_default();
    let mut version = "unknown".to_string();
    let mut source = "unknown".to_string();
    for block in lock.split("[[package]]") {
        if !block.contains("name = \"dynamo-kv-router\"") {
            continue;
        }
        for line in block.lines() {
            if let Some(value) = line.strip_prefix("version = ") {
                version = value.trim_matches('"').to_string();
            }
        }
        source = if block.contains("source = \"registry+") {
            "registry".to_string()
        } else {
            "path".to_string()
        };
    }
    println!("cargo:rustc-env=DYNAMO_KV_ROUTER_VERSION={version}");
    println!("cargo:rustc-env=DYNAMO_KV_ROUTER_SOURCE={source}");
    // Cargo's PROFILE says only "release" or "debug"; the profile's own name is
    // the folder of OUT_DIR = <target>/<profile>/build/<package>-<hash>/out.
    let out_dir = std::env::var("OUT_DIR").unwrap_or_default();
    let profile = Path::new(&out_dir)
        .ancestors()
        .nth(3)
        .and_then(Path::file_name)
        .and_then(|name| name.to_str())
        .unwrap_or("unknown")
        .to_string();
    let opt_level = std::env::var("OPT_LEVEL").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=BINDING_PROFILE={profile}");
    println!("cargo:rustc-env=BINDING_OPT_LEVEL={opt_level}");
}
