//! `cuzk-client demo`: the main job in one command. Starts a daemon on its embedded defaults
//! (GPU when there is one, else CPU), proves a few synthetic jobs concurrently, prints each
//! job's timings, and says where the TIMELINE went.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use cuzk_proto::v1 as pb;

use crate::rpc;
use crate::spawn::SpawnedDaemon;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Jobs to prove.
    #[arg(long, default_value_t = 4)]
    pub jobs: u32,
    /// 2^k constraints per partition.
    #[arg(long, default_value_t = 16)]
    pub log_size: u32,
    /// Partitions per job.
    #[arg(long, default_value_t = 2)]
    pub partitions: u32,
    /// Where the daemon's stderr (and its TIMELINE lines) is written.
    #[arg(long, default_value = "cuzk-demo.log")]
    pub log: PathBuf,
    /// Extra daemon flags, e.g. --daemon-arg=--backend=cpu.
    #[arg(long = "daemon-arg")]
    pub daemon_args: Vec<String>,
}

pub async fn run(a: &DemoArgs) -> anyhow::Result<()> {
    let daemon = SpawnedDaemon::start(&a.daemon_args, &a.log).await?;
    eprintln!("daemon on {} (log: {})", daemon.addr, a.log.display());
    let result = prove_all(a, &daemon.addr).await;
    daemon.stop().await?;
    let rows = result?;
    println!(
        "{:<24} {:>10} {:>9} {:>9} {:>11} {:>9} {:>9}",
        "job", "status", "total ms", "queue ms", "params ms", "synth ms", "prove ms"
    );
    for r in &rows.1 {
        println!(
            "{:<24} {:>10} {:>9} {:>9} {:>11} {:>9} {:>9}",
            r.job_id,
            rpc::status_name(r.status),
            r.total_ms,
            r.queue_wait_ms,
            r.srs_load_ms,
            r.synthesis_ms,
            r.gpu_compute_ms
        );
    }
    let ok = rows
        .1
        .iter()
        .filter(|r| rpc::status_name(r.status) == "completed")
        .count();
    println!(
        "{ok}/{} jobs of {} x 2^{} constraints proven and verified in {:.2} s on backend {}",
        rows.1.len(),
        a.partitions,
        a.log_size,
        rows.0,
        rows.2
    );
    println!(
        "TIMELINE lines are in {} (grep ^TIMELINE); chart: cuzk-client waterfall {} --out waterfall.html",
        a.log.display(),
        a.log.display()
    );
    anyhow::ensure!(ok == rows.1.len(), "some jobs failed");
    Ok(())
}

async fn prove_all(
    a: &DemoArgs,
    addr: &str,
) -> anyhow::Result<(f64, Vec<pb::AwaitProofResponse>, String)> {
    let mut client = rpc::connect(addr).await?;
    let backend = client
        .get_status(pb::GetStatusRequest {})
        .await?
        .into_inner()
        .backend;
    let started = Instant::now();
    let mut ids = Vec::new();
    for i in 0..a.jobs {
        let req = rpc::synthetic_request(a.log_size, a.partitions, 1000 + i as u64);
        let r = client
            .submit_proof(rpc::submit_request(req, None, String::new()))
            .await?;
        ids.push(r.into_inner().job_id);
    }
    let mut out = Vec::new();
    for id in ids {
        let r = client
            .await_proof(pb::AwaitProofRequest {
                job_id: id,
                timeout_ms: 0,
            })
            .await?
            .into_inner();
        out.push(r);
    }
    Ok((started.elapsed().as_secs_f64(), out, backend))
}
