//! How an MSM runs: window width, bucket layout, chunk size, working memory.

use super::*;

/// Threads per block of the sort's partition pass and its bound on partitions
/// (PART_BLOCK, MAX_PARTS in cuda/msm/sort.cuh).
pub(super) const PART_BLOCK: u32 = 512;
pub(super) const MAX_PARTS: u32 = 512;

/// The sort's partitions of `nb` buckets: (pshift, count), ranges of 2^pshift buckets, as
/// many as MAX_PARTS allows: smaller regions keep the place pass's stores closer together,
/// fewer partitions make the partition pass's runs longer.
pub(super) fn partitions(nb: u32) -> (u32, u32) {
    let mut pshift = 0;
    while ((nb - 1) >> pshift) + 1 > MAX_PARTS {
        pshift += 1;
    }
    (pshift, ((nb - 1) >> pshift) + 1)
}

/// Kept free on the device beside an MSM's working set (other allocations, fragmentation).
pub(super) const MEMORY_MARGIN: usize = 512 << 20;

// ---------------------------------------------------------------------------------------
// Planning

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(super) struct MsmLayout {
    pub(super) n: u32,
    pub(super) c: u32,
    pub(super) nwin: u32,
    pub(super) buckets_per_window: u32,
    pub(super) fold: u32,
    pub(super) stride: u32,
}

// SAFETY: six u32, laid out as the kernels' `msm_layout`.
unsafe impl DeviceRepr for MsmLayout {}

/// Windows for c-bit signed digits of a scalar below 2^255: nwin * c >= 256 keeps the last
/// window's carry in range (see cuda/msm/scalar.cuh).
pub(super) fn windows(c: u32) -> u32 {
    256u32.div_ceil(c)
}

pub(super) fn buckets_per_window(c: u32) -> u32 {
    ((1u32 << (c - 1)) + 1).next_multiple_of(REDUCE_L_WIDE)
}

/// How a chunk runs: c-bit windows, `fold` consecutive windows per set of buckets (1 unless
/// the bases are folded), `sets` bucket sets to reduce.
#[derive(Clone, Copy, Debug)]
pub(super) struct Plan {
    pub(super) c: u32,
    pub(super) nwin: u32,
    pub(super) fold: u32,
    pub(super) sets: u32,
}

impl Plan {
    pub(super) fn new<G: MsmGroup>(bases: &Bases<'_, G>, n: usize) -> Plan {
        match bases {
            Bases::Device(DeviceBases { fold: Some(f), .. }) => Plan::folded(*f),
            _ => Plan::plain(n),
        }
    }

    /// Folded bases: `copies` windows per set of buckets.
    pub(super) fn folded(f: Fold) -> Plan {
        let nwin = windows(f.c);
        Plan {
            c: f.c,
            nwin,
            fold: f.copies,
            sets: nwin.div_ceil(f.copies),
        }
    }

    /// Unfolded bases: one set of buckets per window.
    pub(super) fn plain(n: usize) -> Plan {
        let c = window_bits(n);
        Plan {
            c,
            nwin: windows(c),
            fold: 1,
            sets: windows(c),
        }
    }

    pub(super) fn buckets(&self) -> u32 {
        self.sets * buckets_per_window(self.c)
    }
}

/// A bucket's share of the reduction with plain bases, in mixed additions, as
/// [`window_bits`] weighs it.
pub(super) const PLAIN_BUCKET_COST: u64 = 4;

/// The window width for n points: fewest bucket additions (n per window) plus the
/// reduction's (about two full additions, each worth ~2 mixed ones, per bucket). Override
/// with CUZK_MSM_WINDOW for tuning.
pub fn window_bits(n: usize) -> u32 {
    if let Some(c) = std::env::var("CUZK_MSM_WINDOW")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|c| (2..=22).contains(c))
    {
        return c;
    }
    (2..=21u32)
        .min_by_key(|&c| {
            let w = windows(c) as u64;
            w * n as u64 + w * PLAIN_BUCKET_COST * (1u64 << (c - 1))
        })
        .unwrap()
}

/// Device bytes an MSM chunk of n points needs beyond its bases.
pub(super) fn working_bytes<G: MsmGroup>(n: usize, plan: Plan) -> usize {
    let nwin = plan.nwin as usize;
    let nb = plan.buckets() as usize;
    let xyzz = G::XYZZ_U64 * 8;
    let per_point = 32 + nwin * 12; // scalar; staged pair and sorted entry per window
    let segments = MAX_SEGMENTS as usize;
    n * per_point
        + nb * (8 + xyzz) // counts, offsets, buckets
        + segments * (xyzz + 8)
        + 3 * (nb / REDUCE_L as usize + REDUCE_L as usize * plan.sets as usize) * xyzz // reduction levels
        + (1 << 20)
}

/// Bucket sets whose counters (`buckets_per_window` u32 each) one counting pass over device
/// scalars takes: as many as fit in 3/4 of the L2 cache, so that the count's atomics hit it
/// (cuda/msm/sort.cuh); at least one. `CUZK_MSM_COUNT_BYTES` sets the counters' bytes per
/// pass instead (tests force several passes with it).
pub(super) fn sets_per_count_pass(dev: &GpuDevice, buckets_per_window: u32) -> Result<u32> {
    let bytes = match std::env::var("CUZK_MSM_COUNT_BYTES")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        Some(b) => b,
        None => {
            let l2 = dev
                .ctx()
                .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?;
            l2.max(0) as u64 * 3 / 4
        }
    };
    Ok(sets_within(bytes, buckets_per_window))
}

/// Sets of `buckets_per_window` u32 counters that fit in `bytes`; at least one.
pub(super) fn sets_within(bytes: u64, buckets_per_window: u32) -> u32 {
    (bytes / (4 * buckets_per_window.max(1) as u64)).clamp(1, u32::MAX as u64) as u32
}

/// Upper bound on accumulation segments (threads), for memory planning.
pub(super) const MAX_SEGMENTS: u32 = 1 << 20;

/// Threads for bucket accumulation. Every segment holds the same number of entries, so
/// every thread does the same work: two full waves of resident threads (as many as the
/// registers allow on every SM) finish together, with no ragged last wave.
pub(super) fn accumulate_segments(dev: &GpuDevice, k: &Kernels, entries: u32) -> Result<u32> {
    let sms = dev
        .ctx()
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
        as u32;
    let blocks = k
        .accumulate
        .occupancy_max_active_blocks_per_multiprocessor(ACCUMULATE_BLOCK, 0, None)?
        .max(1);
    let waves = 2 * sms * blocks * ACCUMULATE_BLOCK;
    Ok(entries.clamp(1, waves.min(MAX_SEGMENTS)))
}

/// Threads per block of the accumulation kernels (their __launch_bounds__).
pub(super) const ACCUMULATE_BLOCK: u32 = 128;

/// Largest chunk of `n` points whose working set (and bases, when they are not resident)
/// fits in `free` bytes.
pub(super) fn plan_chunk<G: MsmGroup>(
    bases: &Bases<'_, G>,
    n: usize,
    free: usize,
) -> Option<usize> {
    let budget = free.saturating_sub(MEMORY_MARGIN);
    let upload_bases = matches!(bases, Bases::Host(_));
    let mut chunk = n;
    loop {
        let need = working_bytes::<G>(chunk, Plan::new(bases, chunk))
            + if upload_bases {
                chunk * G::AFFINE_U64 * 8
            } else {
                0
            };
        if need <= budget {
            return Some(chunk);
        }
        if chunk <= 1024 {
            return None;
        }
        chunk = chunk.div_ceil(2);
    }
}
