//! Witnesses computed natively for the circuits whose structure we know, instead of by
//! running the circuit's gadgets for their values.
//!
//! A real 32 GiB PoRep partition is 98% SHA-256: bellpepper's gadget allocates every bit of
//! every round through a closure, an `Option<bool>` and eagerly built linear combinations,
//! ~35 core-seconds of witness per partition, against ~1.3 s of device work. Here the
//! SHA-256 compressions run on native words and their bits are pushed straight into the
//! witness, in the order and with the values the gadget gives them (`sha256`); Poseidon's
//! rounds run on field elements instead of linear combinations (`poseidon`); the rest of a
//! circuit (bit decompositions, Merkle insertion, packing) still runs through the proof
//! crates' own gadgets, in the same order as the stock circuit (`porep`).
//!
//! The general witness path (`crate::witness`) stays the reference: tests assert equal
//! assignments, and a witness that fails the matrices' row check on the device turns the
//! native path off for that shape (`disable`), so the retry takes the general path.

pub mod porep;
pub mod poseidon;
pub mod post;
pub mod sha256;

use std::collections::HashSet;
use std::sync::Mutex;

#[derive(Default)]
struct Shapes {
    /// Shapes whose witness the native path has made.
    used: HashSet<String>,
    /// Shapes the native path is off for.
    disabled: HashSet<String>,
}

static SHAPES: Mutex<Option<Shapes>> = Mutex::new(None);

fn shapes<T>(f: impl FnOnce(&mut Shapes) -> T) -> T {
    let mut s = SHAPES.lock().unwrap_or_else(|p| p.into_inner());
    f(s.get_or_insert_with(Shapes::default))
}

/// Whether the native witness may be used for circuit shape `key`; if so, it is noted as
/// used.
pub fn use_for(key: &str) -> bool {
    shapes(|s| {
        let on = !s.disabled.contains(key);
        if on {
            s.used.insert(key.to_string());
        }
        on
    })
}

/// A witness of shape `key` failed the matrices' row check. If the native path made it,
/// the path is turned off for the shape and this returns true: the retry takes the general
/// path before the matrices are blamed.
pub fn blame(key: &str) -> bool {
    shapes(|s| {
        if !s.used.remove(key) {
            return false;
        }
        tracing::warn!(
            "{key}: a witness failed the row check; the general witness path takes this shape from now on"
        );
        s.disabled.insert(key.to_string());
        true
    })
}

#[cfg(test)]
mod sha256_tests;
