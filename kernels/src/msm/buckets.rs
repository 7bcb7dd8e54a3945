//! After accumulation: heads joined into their buckets, then each set of buckets reduced
//! to sum_d d * B_d in levels.

use super::*;

/// Slots per thread of each level of `join_heads` (cuda/msm/accumulate.cuh): the list of
/// open partial sums shrinks by JOIN_GROUP / 2 per level, and each thread adds at most
/// JOIN_GROUP / 2 points that are not infinity. The levels run one after another, each a
/// chain of dependent full additions, so the whole join costs about
/// JOIN_GROUP / 2 * log_{JOIN_GROUP/2}(segments) additions in a row: 32 here (8 levels of 4
/// for 67k segments); at 32 slots (51) a real PoRep partition's G2 B MSM spent 9.4 ms in it.
const JOIN_GROUP: u32 = 8;

/// Adds the heads (`keys[i]` = bucket + 1 where segment i began inside a bucket, else 0) into
/// their buckets, by a segmented reduction in levels, so that no thread adds more than
/// JOIN_GROUP of them whatever the skew.
pub(super) fn join_heads<G: MsmGroup>(
    stream: &Arc<CudaStream>,
    k: &Kernels,
    keys: CudaSlice<u32>,
    vals: CudaSlice<u64>,
    segments: u32,
    buckets: &mut CudaViewMut<'_, u64>,
) -> Result<()> {
    let cap = 2 * segments.div_ceil(JOIN_GROUP) as usize;
    let (mut kin, mut vin) = (keys, vals);
    let mut kout = unsafe { stream.alloc::<u32>(cap) }?;
    let mut vout = unsafe { stream.alloc::<u64>(cap * G::XYZZ_U64) }?;
    let mut m = segments;
    loop {
        let groups = m.div_ceil(JOIN_GROUP);
        unsafe {
            stream
                .launch_builder(&k.join_heads)
                .arg(&kin)
                .arg(&vin)
                .arg(&m)
                .arg(&JOIN_GROUP)
                .arg(&mut kout)
                .arg(&mut vout)
                .arg(&mut *buckets)
                .launch(grid(groups, ACCUMULATE_BLOCK))?;
        }
        if groups == 1 {
            return Ok(());
        }
        // The next level reads this one's 2 * groups slots; the buffers it read before are
        // at least that long (the head list, or an earlier level's larger output).
        m = 2 * groups;
        std::mem::swap(&mut kin, &mut kout);
        std::mem::swap(&mut vin, &mut vout);
    }
}

/// The first reduction level's segment for `nwin` sets of `len` buckets (a multiple of
/// REDUCE_L_WIDE, buckets_per_window). `CUZK_MSM_REDUCE_WIDE`: 0 never wide, 1 always (the
/// tests' way to the wide level at small sizes), unset by size.
fn first_segment(len: u32, nwin: u32) -> u32 {
    let wide = match std::env::var("CUZK_MSM_REDUCE_WIDE").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => len as u64 * nwin as u64 >= REDUCE_WIDE_FROM,
    };
    if wide {
        REDUCE_L_WIDE
    } else {
        REDUCE_L
    }
}

/// A level's `s` outputs per window padded for the next level (and sum_windows), whose
/// segment is REDUCE_L: one stays one.
fn padded(s: u32) -> u32 {
    if s <= 1 {
        1
    } else {
        s.next_multiple_of(REDUCE_L)
    }
}

/// Runs the reduction levels of cuda/msm/reduce.cuh over `nwin` windows of `len` buckets;
/// returns, per level, one point per window (that level's Sum(acc)) and the level's segment
/// L, by which the host multiplies the levels after it.
pub(super) fn reduce_windows<G: MsmGroup>(
    stream: &Arc<CudaStream>,
    k: &Kernels,
    buckets: CudaSlice<u64>,
    len: u32,
    nwin: u32,
    prof: &mut Profile,
) -> Result<Vec<(CudaSlice<u64>, u32)>> {
    let xyzz = G::XYZZ_U64;
    let mut levels = Vec::new();
    let mut cur = buckets;
    let mut len = len;
    let mut l = first_segment(len, nwin);
    loop {
        let s = len / l;
        let sp = padded(s);
        let mut acc = stream.alloc_zeros::<u64>((nwin * sp) as usize * xyzz)?;
        let mut run = stream.alloc_zeros::<u64>((nwin * sp) as usize * xyzz)?;
        unsafe {
            stream
                .launch_builder(&k.reduce_level)
                .arg(&cur)
                .arg(&len)
                .arg(&l)
                .arg(&nwin)
                .arg(&sp)
                .arg(&mut acc)
                .arg(&mut run)
                .launch(grid(s * nwin, 128))?;
        }
        prof.mark(&format!("reduce{}", levels.len()))?;
        levels.push((sum_windows::<G>(stream, k, acc, sp, nwin)?, l));
        prof.mark(&format!("sum{}", levels.len() - 1))?;
        if s == 1 {
            return Ok(levels);
        }
        cur = run;
        len = sp;
        l = REDUCE_L;
    }
}

/// Sums each window's `len` points down to one (len is 1 or a multiple of REDUCE_L).
pub(super) fn sum_windows<G: MsmGroup>(
    stream: &Arc<CudaStream>,
    k: &Kernels,
    points: CudaSlice<u64>,
    len: u32,
    nwin: u32,
) -> Result<CudaSlice<u64>> {
    let l = REDUCE_L;
    let mut cur = points;
    let mut len = len;
    while len > 1 {
        let s = len / l;
        let sp = padded(s);
        let mut out = stream.alloc_zeros::<u64>((nwin * sp) as usize * G::XYZZ_U64)?;
        unsafe {
            stream
                .launch_builder(&k.sum_level)
                .arg(&cur)
                .arg(&len)
                .arg(&l)
                .arg(&nwin)
                .arg(&sp)
                .arg(&mut out)
                .launch(grid(s * nwin, 128))?;
        }
        cur = out;
        len = sp;
    }
    Ok(cur)
}
