//! Host -> device upload of a scalar vector, the two ways the CUDA backend can do it, in one
//! run: through the pinned staging buffers (a host copy beside the DMA), and pinned in place
//! (cuMemHostRegister, the DMA engine reading the vector itself), the registration's own
//! cost shown apart. (The backend stages: pinned in place, the registration costs more than
//! the staging copy it saves.)
//!
//!     gpu_upload [sizes in MiB, default 86,1024,4096] [--reps N]
//!
//! 86 MiB is a 2 KiB PoRep partition's aux assignment, 4096 MiB a 2^27 (32 GiB) one's. The
//! vectors are allocated as synthesis allocates them (`hugevec`: transparent huge pages) and
//! written first, as synthesis leaves them. Medians of N runs.

use std::time::Instant;

use blstrs::Scalar;
use cuzk_benches::{median_ms as median, time_ms};
use cuzk_core::backend::cuda::as_limbs;
use cuzk_core::backend::cuda::kernels::{DeviceScalars, HostRegistration};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut sizes: Vec<usize> = vec![86, 1024, 4096];
    let mut reps = 5;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--reps" {
            reps = args.next().ok_or("--reps N")?.parse()?;
        } else {
            sizes = a.split(',').map(str::parse).collect::<Result<_, _>>()?;
        }
    }
    let Some(dev) = cuzk_core::backend::cuda::kernels::device_or_skip(0) else {
        return Ok(());
    };
    println!("| MiB | staged ms (GB/s) | register ms | direct DMA ms (GB/s) | unregister ms | pinned in place, all ms (GB/s) |");
    println!("|---|---|---|---|---|---|");
    for mib in sizes {
        let n = (mib << 20) / 32;
        let mut host = cuzk_core::hugevec::zeroed(n);
        host.iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = Scalar::from(i as u64 + 1));
        let limbs = as_limbs(&host);
        let gbs = |ms: f64| (n * 32) as f64 / ms / 1e6;
        let staged = warm_time(reps, || {
            let d = DeviceScalars::upload(&dev, limbs).expect("staged upload");
            dev.synchronize().expect("sync");
            drop(d);
        });
        let (mut reg, mut dma, mut unreg, mut all) = (vec![], vec![], vec![], vec![]);
        for _ in 0..reps {
            let d = DeviceScalars::alloc(&dev, n)?;
            let t = Instant::now();
            let pin = HostRegistration::new(&dev, limbs)?;
            let t1 = Instant::now();
            d.copy_from_registered(&dev, &pin, limbs)?;
            let t2 = Instant::now();
            drop(pin);
            let t3 = Instant::now();
            reg.push(t1 - t);
            dma.push(t2 - t1);
            unreg.push(t3 - t2);
            all.push(t3 - t);
        }
        // The device copy must be the host's, both ways.
        let staged_copy = DeviceScalars::upload(&dev, limbs)?.download(&dev)?;
        let d = DeviceScalars::alloc(&dev, n)?;
        d.copy_from_registered(&dev, &HostRegistration::new(&dev, limbs)?, limbs)?;
        assert!(
            staged_copy == limbs && d.download(&dev)? == limbs,
            "{mib} MiB: the device copy differs from the host's"
        );
        let (dma, all) = (median(dma), median(all));
        println!(
            "| {mib} | {staged:.1} ({:.1}) | {:.1} | {dma:.1} ({:.1}) | {:.1} | {all:.1} ({:.1}) |",
            gbs(staged),
            median(reg),
            gbs(dma),
            median(unreg),
            gbs(all),
        );
    }
    Ok(())
}

/// As `time_ms`, after one run that warms the device's allocator and the vector's pages.
fn warm_time(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    time_ms(reps, f)
}
