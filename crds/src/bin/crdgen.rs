//! Writes every Berth CRD, and a kustomization listing them, to `manifests/crds/` (or the
//! directory given as the first argument). A unit test in `berth-crds` fails when the committed
//! files differ from this output.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../manifests/crds"));
    std::fs::create_dir_all(&dir)?;
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "yaml") {
            std::fs::remove_file(path)?;
        }
    }
    for (name, contents) in berth_crds::generated_manifests() {
        let path = dir.join(name);
        std::fs::write(&path, contents)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
