//! A parameter set's host copy, released once the devices hold it.
//!
//! A 32 GiB PoRep set is ~47 GB of points, read once from its file and uploaded to each GPU,
//! which from then on proves from its own copy: the host's is dead weight, ~45 GiB that a
//! storage provider's machine needs for sealing beside us.
//!
//! When. After a device step under a set of at least `release_host_params_min_bytes`, once
//! every device holds each of the set's big vectors (H, L and the aux parts of A and B) in
//! its final form (`Backend::keep_for_release`; a vector is folded at its second use, from
//! the host copy, so this is after the second partition at the earliest). The cache's entry
//! is then replaced by the same set without those vectors (`SrsCache::release_host`: the
//! verifying key and the input parts stay), and every job holding the old entry is moved to
//! the new one. The memory comes back when the last step or finalize in flight under the old
//! entry lets go of it: seconds. The CPU backend never holds vectors, so a daemon without a
//! GPU never releases anything.
//!
//! After. The devices keep those vectors until EvictSRS; they are no longer dropped to make
//! room for others. A partition that needs the host copy again (a retry on the CPU after a
//! device fault, or a device that has lost a vector, which answers `BasesReleased`) goes back
//! through the loader: the released entry is forgotten and the set read from its file as on
//! first use (loading.rs), while the partition waits in the queue. At 32 GiB that reload is
//! ~20 s, against minutes for the CPU proof it precedes.
//!
//! TIMELINE (job `-`): SRS_HOST_RELEASED `srs`, `bytes` (released), `jobs` (moved).

use std::sync::Arc;

use crate::backend::Query;
use crate::shared::Shared;
use crate::srs::SrsEntry;

/// After a device step under `srs` (a partition with `b_inputs` inputs in B): release the
/// set's host copy if it is due.
pub fn after_device_step(shared: &Shared, srs: &Arc<SrsEntry>, b_inputs: usize) {
    let config = &shared.config;
    if !config.release_host_params
        || srs.host_released
        || srs.size_bytes < config.release_host_params_min_bytes
        || shared.devices.is_empty()
    {
        return;
    }
    let vectors = released_vectors(srs, b_inputs);
    if !shared
        .devices
        .iter()
        .all(|d| d.backend.keep_for_release(&srs.id, &vectors))
    {
        return;
    }
    let Some(released) = shared.srs.release_host(&srs.id, srs) else {
        return;
    };
    let jobs = shared.swap_jobs_srs(srs, &released);
    let bytes = srs.host_bytes() - released.host_bytes();
    tracing::info!(srs = %srs.id, bytes, jobs, "parameters' host copy released");
    shared.timeline.emit(
        "SRS_HOST_RELEASED",
        "-",
        &[("srs", &srs.id), ("bytes", &bytes), ("jobs", &jobs)],
    );
}

/// The vectors the devices must hold for `srs`'s host copy to go, with their lengths: all but
/// the input parts, which the released entry keeps.
pub fn released_vectors(srs: &SrsEntry, b_inputs: usize) -> Vec<(Query, usize)> {
    let lens = srs.lens;
    let inputs = srs.params.vk.ic.len();
    vec![
        (Query::H, lens.h),
        (Query::L, lens.l),
        (Query::AAux, lens.a.saturating_sub(inputs)),
        (Query::BG1Aux, lens.b_g1.saturating_sub(b_inputs)),
        (Query::BG2Aux, lens.b_g2.saturating_sub(b_inputs)),
    ]
}

/// Whether a partition bound for the CPU (`on_cpu`) under `srs` needs the set loaded again.
pub fn needs_reload(srs: &SrsEntry, on_cpu: bool) -> bool {
    on_cpu && srs.host_released
}
