//! Compiles every top-level `cuda/*.cu` into its own fatbin (SASS for sm_80/86/89/90 plus
//! compute_90 PTX, so newer GPUs JIT from the PTX) and embeds them in the crate.
//!
//! No nvcc: the crate still builds, without kernels, and says so (`KERNELS_BUILT = false`),
//! so a CPU-only machine can build and run the daemon. nvcc present but a kernel failing to
//! compile: the build fails, so CI catches a broken kernel.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const ENV_VARS: &[&str] = &[
    "NVCC",
    "CUDA_HOME",
    "CUDA_PATH",
    "PATH",
    "CUZK_NVCC_FLAGS",
    "CUZK_CUDA_ARCHS",
    "CUZK_KERNELS",
];

/// SASS for these (Ampere A100, Ampere GA10x, Ada, Hopper), PTX for the newest so later
/// GPUs JIT it. CUZK_CUDA_ARCHS="90" narrows a developer's build (one cicc run instead of
/// four); releases and CI use the default.
const DEFAULT_ARCHS: &str = "80,86,89,90";
const PTX_ARCH: &str = "90";

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let cuda_dir = manifest.join("cuda");
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());

    println!("cargo:rerun-if-changed={}", cuda_dir.display());
    rerun_on_tree(&cuda_dir);
    for var in ENV_VARS {
        println!("cargo:rerun-if-env-changed={var}");
    }
    // Watched only when present: a missing path makes cargo rerun this script (and rebuild
    // everything above it) on every build. Installing it later changes NVCC (watched above)
    // when it comes through our scripts.
    let workspace_nvcc = manifest.join("../.tools/cuda/nvidia/cu13/bin/nvcc");
    if workspace_nvcc.exists() {
        println!("cargo:rerun-if-changed={}", workspace_nvcc.display());
    }

    let mut sources = top_level_sources(&cuda_dir);
    // CUZK_KERNELS="ntt" builds only those modules (developer iteration); default all.
    if let Ok(only) = env::var("CUZK_KERNELS") {
        let keep: Vec<&str> = only.split(',').map(str::trim).collect();
        sources.retain(|p| keep.contains(&p.file_stem().unwrap().to_str().unwrap()));
    }
    let nvcc = find_nvcc(&workspace_nvcc);

    let mut generated = String::new();
    match nvcc {
        None => {
            println!(
                "cargo:warning=cuzk-kernels: nvcc not found (NVCC, CUDA_HOME, CUDA_PATH, PATH, \
                 .tools/cuda); built without CUDA kernels. Run scripts/install-nvcc.sh."
            );
            generated.push_str("pub const KERNELS_BUILT: bool = false;\n");
            generated.push_str("pub static FATBINS: &[(&str, &[u8])] = &[];\n");
        }
        Some(nvcc) => {
            generated.push_str("pub const KERNELS_BUILT: bool = true;\n");
            generated.push_str("pub static FATBINS: &[(&str, &[u8])] = &[\n");
            // One nvcc per source, all at once: the MSM's G2 code alone takes minutes.
            let jobs: Vec<_> = sources
                .iter()
                .map(|src| {
                    let name = src.file_stem().unwrap().to_str().unwrap().to_owned();
                    let fatbin = out_dir.join(format!("{name}.fatbin"));
                    let (nvcc, src, out_dir, f) =
                        (nvcc.clone(), src.clone(), out_dir.clone(), fatbin.clone());
                    let handle = std::thread::spawn(move || compile(&nvcc, &src, &f, &out_dir));
                    (name, fatbin, handle)
                })
                .collect();
            for (name, fatbin, handle) in jobs {
                if let Err(e) = handle.join().unwrap() {
                    panic!("{e}");
                }
                writeln!(
                    generated,
                    "    ({name:?}, include_bytes!({:?})),",
                    fatbin.display().to_string()
                )
                .unwrap();
            }
            generated.push_str("];\n");
        }
    }
    fs::write(out_dir.join("fatbins.rs"), generated).unwrap();
}

fn rerun_on_tree(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        println!("cargo:rerun-if-changed={}", path.display());
        if path.is_dir() {
            rerun_on_tree(&path);
        }
    }
}

fn top_level_sources(dir: &Path) -> Vec<PathBuf> {
    let mut sources: Vec<PathBuf> = fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "cu"))
                .collect()
        })
        .unwrap_or_default();
    sources.sort();
    sources
}

fn find_nvcc(workspace_nvcc: &Path) -> Option<PathBuf> {
    let candidates = [
        env::var_os("NVCC").map(PathBuf::from),
        env::var_os("CUDA_HOME").map(|h| PathBuf::from(h).join("bin/nvcc")),
        env::var_os("CUDA_PATH").map(|h| PathBuf::from(h).join("bin/nvcc")),
        env::var_os("PATH").and_then(|paths| {
            env::split_paths(&paths)
                .map(|p| p.join("nvcc"))
                .find(|p| p.is_file())
        }),
        Some(workspace_nvcc.to_path_buf()),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file())
}

fn arch_flags() -> Vec<String> {
    let archs = env::var("CUZK_CUDA_ARCHS").unwrap_or_else(|_| DEFAULT_ARCHS.to_owned());
    let mut flags: Vec<String> = archs
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(|a| format!("-gencode=arch=compute_{a},code=sm_{a}"))
        .collect();
    flags.push(format!(
        "-gencode=arch=compute_{PTX_ARCH},code=compute_{PTX_ARCH}"
    ));
    flags
}

fn compile(nvcc: &Path, src: &Path, fatbin: &Path, out_dir: &Path) -> Result<(), String> {
    let mut cmd = Command::new(nvcc);
    cmd.arg("-fatbin")
        .arg("-O3")
        .arg("-std=c++17")
        // The register and spill report lands in the build log (cargo -vv) and NOTES.md.
        .arg("-Xptxas=-v")
        // The gencode targets compile in parallel.
        .arg("--threads=0")
        .args(arch_flags())
        .arg("-o")
        .arg(fatbin)
        .arg(src)
        .current_dir(out_dir);
    if let Ok(extra) = env::var("CUZK_NVCC_FLAGS") {
        cmd.args(extra.split_whitespace());
    }
    let output = cmd
        .output()
        .map_err(|e| format!("cuzk-kernels: cannot run {}: {e}", nvcc.display()))?;
    let log = out_dir.join(format!(
        "{}.nvcc.log",
        src.file_stem().unwrap().to_string_lossy()
    ));
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    let _ = fs::write(&log, &text);
    if !output.status.success() {
        // A kernel that does not compile must fail the build (and CI), never be skipped.
        return Err(format!(
            "cuzk-kernels: nvcc failed on {} ({}):\n{text}",
            src.display(),
            output.status
        ));
    }
    Ok(())
}
