//! Writes every Berth CRD to `manifests/crds/` (or the directory given as the first argument).
//! The committed YAML is checked against this output by `tests/crd_manifests`.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../manifests/crds"));
    std::fs::create_dir_all(&dir)?;
    for crd in berth_crds::all_crds() {
        let path = dir.join(berth_crds::manifest_file_name(&crd));
        std::fs::write(&path, berth_crds::render_manifest(&crd))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
