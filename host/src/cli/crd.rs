//! `tern crd`: the CRD manifests generated from the API types.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::api::crd::{dns_endpoint_crd, tern_crds, to_yaml};

#[derive(Debug, Args)]
pub struct CrdArgs {
    /// Write one file per CRD into this directory instead of printing a multi-document stream.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Include external-dns' DNSEndpoint CRD (for clusters without external-dns).
    #[arg(long)]
    with_dns_endpoint: bool,
}

pub fn run(args: CrdArgs) -> anyhow::Result<()> {
    let mut crds = tern_crds();
    if args.with_dns_endpoint {
        crds.push(dns_endpoint_crd());
    }
    match args.out {
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            for (file, crd) in crds {
                let path = dir.join(file);
                std::fs::write(&path, to_yaml(&crd)?).with_context(|| format!("cannot write {}", path.display()))?;
                println!("{}", path.display());
            }
        }
        None => {
            for (_, crd) in crds {
                print!("---\n{}", to_yaml(&crd)?);
            }
        }
    }
    Ok(())
}
