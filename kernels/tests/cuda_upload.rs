//! Uploads pinned in place (cuMemHostRegister, DMA straight from the vector) against the
//! host's own vector: what comes back from the device must be what went up, at sizes that
//! are not multiples of the copy's pieces, and a registration refuses what it does not cover.
//!
//! One test, its parts in sequence: the driver refuses a second registration of a page
//! already registered, and small vectors of concurrent tests may share pages.
//!
//! And the order of an upload after kernels still queued: a new vector may take memory the
//! pool has just taken back from them, so its copy must wait for them.

mod common;

use cuzk_kernels::ntt::{self, Transform};
use cuzk_kernels::{
    pinned_host_bytes, DeviceScalars, GpuDevice, HostRegistration, Limbs, PinnedScalars,
};

/// A 2^27 partition's aux is 4.3 GB; this is 256 MiB and one element.
const LARGE: usize = (256 << 20) / 32 + 1;

fn fresh_limbs(n: usize) -> Vec<Limbs> {
    common::random_scalars(n, common::fresh_seed())
        .iter()
        .map(common::limbs)
        .collect()
}

#[test]
fn uploads_pinned_in_place_are_exact_and_bounded() {
    let Some(dev) = common::device() else { return };
    registered_uploads_land_whole_at_odd_sizes(&dev);
    large_uploads_land_whole_either_way(&dev);
    registrations_refuse_what_they_do_not_cover(&dev);
}

/// Page-locked memory shows in the process's count while it is held, allocated
/// (`PinnedScalars`) or registered in place (`HostRegistration`). The other tests of this
/// binary pin and release their own memory meanwhile, so only lower bounds are asserted here;
/// the count's arithmetic is a unit test of the crate.
#[test]
fn pinned_memory_is_counted_while_it_is_held() {
    let Some(dev) = common::device() else { return };
    let bytes = (LARGE * 32) as u64;
    let pinned = PinnedScalars::alloc(&dev, LARGE).unwrap();
    let one = pinned_host_bytes();
    assert!(
        one.now >= bytes && one.peak >= one.now,
        "{one:?} with {bytes} bytes allocated pinned"
    );
    let host = fresh_limbs(LARGE);
    let registration = HostRegistration::new(&dev, &host).unwrap();
    let two = pinned_host_bytes();
    assert!(
        two.now >= 2 * bytes && two.peak >= two.now,
        "{two:?} with {bytes} bytes allocated pinned and as many registered"
    );
    drop(registration);
    drop(pinned);
}

/// The pool keeps what frees return while the device is busy (its release threshold is the
/// whole device), and `release_idle_pool_memory` hands it back down to `idle_pool_keep`: a
/// vector of that much and 2 GiB more, written and freed, leaves 2 GiB to release (other
/// tests' memory in use only adds to what the pool holds above the keep; 1 GiB is asserted,
/// as other threads may take some of the freed memory first).
#[test]
fn the_pool_keeps_freed_memory_until_the_idle_release() {
    let Some(dev) = common::device() else { return };
    let keep = dev.idle_pool_keep().unwrap();
    let extra = 2u64 << 30;
    let big = DeviceScalars::zeros(&dev, ((keep + extra) / 32) as usize).unwrap();
    // As at a proving step's end: the free is queued after the last synchronisation, so
    // the release must see it complete itself (part 16: without that, 32 MiB came back).
    drop(big);
    let r = dev.release_idle_pool_memory().unwrap();
    assert!(
        r.released >= extra / 2,
        "released {} bytes after freeing {} (keep {keep})",
        r.released,
        keep + extra
    );
}

/// A vector freed while kernels that write it are still queued goes back to the pool at
/// once (stream-ordered), and the next allocation of its size takes it. The upload into the
/// new vector runs on the copy stream: unless it waits for the compute stream, the queued
/// transforms overwrite what it copied. (The proving path does exactly this: A's density
/// selection is queued, its rank buffers freed, and A's input MSM uploads its few scalars
/// into a new vector; two backends on one device do it across each other's streams.)
#[test]
fn an_upload_waits_for_the_kernels_queued_before_its_allocation() {
    let Some(dev) = common::device() else { return };
    let n = 1usize << 22;
    ntt::prepare(&dev, 22).unwrap();
    for round in 0..4 {
        let mut busy = DeviceScalars::upload(&dev, &fresh_limbs(n)).unwrap();
        let want = fresh_limbs(n);
        // ~1 ms each on an H200: the copy below is queued long before they end.
        for _ in 0..48 {
            ntt::transform_device(&dev, &mut busy, Transform::Ntt).unwrap();
        }
        drop(busy);
        let fresh = DeviceScalars::upload(&dev, &want).unwrap();
        let back = fresh.download(&dev).unwrap();
        let differ = back.iter().zip(&want).filter(|(a, b)| a != b).count();
        assert_eq!(
            differ, 0,
            "round {round}: {differ} of {n} elements overwritten"
        );
    }
}

fn registered_uploads_land_whole_at_odd_sizes(dev: &GpuDevice) {
    // 1, a few, one piece (2^24) and a bit, several pieces and a remainder.
    for n in [1usize, 7, 1 << 20, (1 << 24) + 3, 2 * (1 << 24) + 11] {
        let host = fresh_limbs(n);
        let pin = HostRegistration::new(dev, &host).expect("register");
        let d = DeviceScalars::alloc(dev, n).unwrap();
        d.copy_from_registered(dev, &pin, &host).unwrap();
        drop(pin);
        assert!(
            d.download(dev).unwrap() == host,
            "n = {n}: device copy differs"
        );
        // A part of a registered vector, into a longer device vector.
        let pin = HostRegistration::new(dev, &host).unwrap();
        let part = &host[n / 2..];
        let d = DeviceScalars::zeros(dev, n + 5).unwrap();
        d.copy_from_registered(dev, &pin, part).unwrap();
        let back = d.download(dev).unwrap();
        assert!(back[..part.len()] == *part, "n = {n}: part differs");
        assert!(back[part.len()..].iter().all(|l| *l == [0; 4]));
    }
}

fn large_uploads_land_whole_either_way(dev: &GpuDevice) {
    // A 2^23-scalar vector, staged and pinned in place: exact both ways.
    for n in [LARGE, 1000] {
        let host = fresh_limbs(n);
        let d = DeviceScalars::upload(dev, &host).unwrap();
        assert_eq!(d.len(), n);
        assert!(
            d.download(dev).unwrap() == host,
            "n = {n}: staged copy differs"
        );
        let d = DeviceScalars::alloc(dev, n).unwrap();
        let pin = HostRegistration::new(dev, &host).unwrap();
        d.copy_from_registered(dev, &pin, &host).unwrap();
        assert!(
            d.download(dev).unwrap() == host,
            "n = {n}: pinned copy differs"
        );
    }
    // The vector may change and go as soon as the copy returns; the device keeps its copy.
    let mut host = fresh_limbs(LARGE);
    let d = DeviceScalars::alloc(dev, LARGE).unwrap();
    let pin = HostRegistration::new(dev, &host).unwrap();
    d.copy_from_registered(dev, &pin, &host).unwrap();
    drop(pin);
    let want = host.clone();
    host.iter_mut().for_each(|l| *l = [0; 4]);
    drop(host);
    assert!(d.download(dev).unwrap() == want);
}

fn registrations_refuse_what_they_do_not_cover(dev: &GpuDevice) {
    assert!(HostRegistration::new(dev, &[]).is_err(), "an empty range");
    let host = fresh_limbs(1024);
    let pin = HostRegistration::new(dev, &host[..512]).unwrap();
    let d = DeviceScalars::alloc(dev, 1024).unwrap();
    assert!(
        d.copy_from_registered(dev, &pin, &host).is_err(),
        "beyond the registration"
    );
    assert!(d.copy_from_registered(dev, &pin, &host[..512]).is_ok());
    let short = DeviceScalars::alloc(dev, 100).unwrap();
    assert!(
        short.copy_from_registered(dev, &pin, &host[..512]).is_err(),
        "into a shorter device vector"
    );
}
