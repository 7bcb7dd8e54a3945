//! The synthesis gate: which partition a synthesis worker takes next, and the room it will
//! hold until a device takes it (a pipeline slot and its memory, see budget.rs), both
//! reserved before synthesis starts.
//!
//! Why before: a worker that synthesized first and then waited for room held the finished
//! partition, and itself, while it waited. With eight workers parked that way on sealing
//! partitions, a WinningPoSt found no worker free for 17-33 s on an H200 with 2 KiB PoRep
//! load (minutes at 32 GiB). Here a worker is given a partition only when its room is free,
//! so it never parks; and the partition given is always the most urgent one waiting: when
//! room frees, the head of the queue takes it, whichever worker wakes first (no lower-priority
//! partition behind the head is started in its place).
//!
//! Workers of the urgent lane take only HIGH and CRITICAL partitions, so one is free when a
//! PoSt arrives however much sealing work fills the others.
//!
//! A partition's size is bounded from its parameters (pipeline.rs); a job whose parameters are
//! not known to it yet is handed out to be prepared (loading.rs: found, or parked while its set
//! loads off the workers) and put back in its place.

use std::collections::BinaryHeap;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::budget::{is_urgent, Budget, Usage};
use crate::job::Priority;
use crate::queue::Entry;

/// Which partitions a worker takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    Any,
    /// HIGH and CRITICAL only.
    Urgent,
}

/// What a worker is handed.
pub enum Take<T> {
    /// Synthesize it; the ticket holds its room.
    Admitted(T, Ticket),
    /// Its size is not known yet: find its parameters (loading.rs), then `put_back`.
    Prepare(T),
}

pub struct SynthesisGate<T> {
    state: Mutex<State<T>>,
    /// Signalled on every change a waiting worker may care about: an arrival, a removal,
    /// room freed, the gate closed.
    changed: Condvar,
    budget: Budget,
}

struct State<T> {
    pending: BinaryHeap<Entry<T>>,
    used: Usage,
    /// Tickets alive: partitions holding memory.
    holders: usize,
    peak: HighWater,
    closed: bool,
}

/// The most the reservations have held at once since the gate opened: the figure to compare
/// with the budget (only a partition admitted alone, larger than the budget, or one grown
/// past its bound after synthesis, takes it over).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HighWater {
    pub bytes: u64,
    /// Partitions holding memory at once.
    pub partitions: usize,
}

impl<T> State<T> {
    fn note_peak(&mut self) {
        self.peak.bytes = self.peak.bytes.max(self.used.bytes);
        self.peak.partitions = self.peak.partitions.max(self.holders);
    }
}

/// The room one partition holds: its slot until a device takes it, its bytes until it is
/// dropped (proven, failed, cancelled, drained at shutdown: whatever path it takes).
pub struct Ticket {
    gate: Arc<dyn Room>,
    slot: bool,
    bytes: u64,
}

/// The gate as a ticket sees it (tickets do not carry the gate's item type).
trait Room: Send + Sync {
    /// `ended`: the ticket is gone (its partition holds nothing any more).
    fn release(&self, slots: usize, bytes: u64, ended: bool);
    fn grow(&self, bytes: u64);
}

impl<T: Send + 'static> SynthesisGate<T> {
    pub fn new(budget: Budget) -> Arc<Self> {
        Arc::new(SynthesisGate {
            state: Mutex::new(State {
                pending: BinaryHeap::new(),
                used: Usage::default(),
                holders: 0,
                peak: HighWater::default(),
                closed: false,
            }),
            changed: Condvar::new(),
            budget,
        })
    }

    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    pub fn usage(&self) -> Usage {
        self.state.lock().used
    }

    pub fn high_water(&self) -> HighWater {
        self.state.lock().peak
    }

    /// Queue items (admission bounds their number). False, and nothing queued, once closed.
    pub fn push_all(&self, items: impl IntoIterator<Item = (Priority, u64, T)>) -> bool {
        let mut st = self.state.lock();
        if st.closed {
            return false;
        }
        for (priority, seq, item) in items {
            st.pending.push(Entry {
                priority,
                seq,
                item,
            });
        }
        self.changed.notify_all();
        true
    }

    /// Return a prepared item to its place. The item back when closed.
    pub fn put_back(&self, priority: Priority, seq: u64, item: T) -> Result<(), T> {
        let mut st = self.state.lock();
        if st.closed {
            return Err(item);
        }
        st.pending.push(Entry {
            priority,
            seq,
            item,
        });
        self.changed.notify_all();
        Ok(())
    }

    /// The next partition for a worker of `lane`, waiting until the most urgent one waiting
    /// fits; `size` gives the bytes it will hold (None: unknown until prepared). None once
    /// the gate is closed.
    pub fn take(self: &Arc<Self>, lane: Lane, size: impl Fn(&T) -> Option<u64>) -> Option<Take<T>> {
        let mut st = self.state.lock();
        loop {
            if st.closed {
                return None;
            }
            if let Some(head) = st.pending.peek() {
                if lane == Lane::Any || is_urgent(head.priority) {
                    match size(&head.item) {
                        None => {
                            let e = st.pending.pop().expect("peeked");
                            return Some(Take::Prepare(e.item));
                        }
                        Some(bytes) if self.budget.admits(st.used, head.priority, bytes) => {
                            let e = st.pending.pop().expect("peeked");
                            st.used.slots += 1;
                            st.used.bytes += bytes;
                            st.holders += 1;
                            st.note_peak();
                            let ticket = Ticket {
                                gate: self.clone(),
                                slot: true,
                                bytes,
                            };
                            return Some(Take::Admitted(e.item, ticket));
                        }
                        Some(_) => {}
                    }
                }
            }
            self.changed.wait(&mut st);
        }
    }

    /// Remove every waiting item matching `pred` (cancellation); returns how many.
    pub fn remove_where(&self, pred: impl Fn(&T) -> bool) -> usize {
        let mut st = self.state.lock();
        let before = st.pending.len();
        let kept: Vec<Entry<T>> = std::mem::take(&mut st.pending)
            .into_vec()
            .into_iter()
            .filter(|e| !pred(&e.item))
            .collect();
        st.pending = BinaryHeap::from(kept);
        let removed = before - st.pending.len();
        if removed > 0 {
            // The head may have changed: a waiter may now fit.
            self.changed.notify_all();
        }
        removed
    }

    /// Take every waiting item out (shutdown), most urgent first.
    pub fn drain(&self) -> Vec<T> {
        let mut st = self.state.lock();
        let mut out = Vec::with_capacity(st.pending.len());
        while let Some(e) = st.pending.pop() {
            out.push(e.item);
        }
        out
    }

    /// Stop handing out work and refuse new items; every waiting worker gets None.
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.changed.notify_all();
    }

    pub fn len(&self) -> usize {
        self.state.lock().pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: Send + 'static> Room for SynthesisGate<T> {
    fn release(&self, slots: usize, bytes: u64, ended: bool) {
        let mut st = self.state.lock();
        st.used.slots -= slots;
        st.used.bytes -= bytes;
        st.holders -= usize::from(ended);
        self.changed.notify_all();
    }

    fn grow(&self, bytes: u64) {
        let mut st = self.state.lock();
        st.used.bytes += bytes;
        st.note_peak();
    }
}

impl Ticket {
    /// A device took the partition: its slot is free for the next one; its memory stays
    /// held until the device step is done.
    pub fn leave_slot(&mut self) {
        if std::mem::take(&mut self.slot) {
            self.gate.release(1, 0, false);
        }
    }

    /// The partition's size once synthesized. Smaller than the bound reserved (the usual
    /// case): the rest is freed. Larger: held anyway, since waiting now would park a worker
    /// on a finished partition (the bound is meant to make this rare).
    pub fn resize(&mut self, bytes: u64) {
        if bytes < self.bytes {
            self.gate.release(0, self.bytes - bytes, false);
        } else if bytes > self.bytes {
            self.gate.grow(bytes - self.bytes);
        }
        self.bytes = bytes;
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.gate.release(usize::from(self.slot), self.bytes, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn gate(
        slots: usize,
        urgent_slots: usize,
        bytes: u64,
        urgent_bytes: u64,
    ) -> Arc<SynthesisGate<&'static str>> {
        SynthesisGate::new(Budget {
            slots,
            urgent_slots,
            bytes,
            urgent_bytes,
        })
    }

    fn admitted(t: Option<Take<&'static str>>) -> (&'static str, Ticket) {
        match t {
            Some(Take::Admitted(item, ticket)) => (item, ticket),
            Some(Take::Prepare(item)) => panic!("{item}: prepare, not admitted"),
            None => panic!("closed"),
        }
    }

    #[test]
    fn the_head_takes_freed_room_not_whoever_wakes_first() {
        let g = gate(1, 0, 1000, 0);
        g.push_all([(Priority::Normal, 1, "n1"), (Priority::Normal, 2, "n2")]);
        let (first, ticket) = admitted(g.take(Lane::Any, |_| Some(10)));
        assert_eq!(first, "n1");
        // The one slot is held: a second worker waits, then a CRITICAL partition arrives.
        let waiter = {
            let g = g.clone();
            std::thread::spawn(move || admitted(g.take(Lane::Any, |_| Some(10))))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "no room: must wait");
        g.push_all([(Priority::Critical, 3, "c1")]);
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "still no room");
        drop(ticket);
        let (item, _held) = waiter.join().unwrap();
        assert_eq!(
            item, "c1",
            "the freed slot goes to the most urgent partition"
        );
        assert_eq!(
            g.usage(),
            Usage {
                slots: 1,
                bytes: 10
            }
        );
        assert_eq!(g.len(), 1, "n2 waits on");
    }

    #[test]
    fn urgent_lane_and_share_serve_critical_behind_full_normal_load() {
        // One general slot and 80 of 100 bytes for NORMAL work; one more slot, and 20 bytes,
        // for urgent work.
        let g = gate(1, 1, 100, 20);
        g.push_all([(Priority::Normal, 1, "n1"), (Priority::Normal, 2, "n2")]);
        let (_, _n1) = admitted(g.take(Lane::Any, |_| Some(70)));
        // The urgent lane leaves NORMAL work alone, even where there would be room for it.
        let urgent = {
            let g = g.clone();
            std::thread::spawn(move || admitted(g.take(Lane::Urgent, |_| Some(25))))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!urgent.is_finished(), "n2 is not for the urgent lane");
        g.push_all([(Priority::Critical, 3, "c1")]);
        let (c, ticket) = urgent.join().unwrap();
        assert_eq!(c, "c1");
        assert_eq!(ticket.bytes(), 25);
        assert_eq!(
            g.usage(),
            Usage {
                slots: 2,
                bytes: 95
            }
        );
        assert_eq!(g.len(), 1, "n2 still waits for a general slot");
    }

    #[test]
    fn unknown_size_is_prepared_then_put_back_in_place() {
        let g = gate(4, 0, 1000, 0);
        g.push_all([(Priority::High, 1, "h1"), (Priority::Normal, 2, "n1")]);
        let item = match g.take(Lane::Any, |i| (*i != "h1").then_some(1)) {
            Some(Take::Prepare(item)) => item,
            _ => panic!("h1 must be prepared first"),
        };
        assert_eq!(item, "h1");
        g.put_back(Priority::High, 1, item).unwrap();
        let (first, _t) = admitted(g.take(Lane::Any, |_| Some(1)));
        assert_eq!(first, "h1", "back at the head");
    }

    #[test]
    fn tickets_release_slot_and_memory_and_resize() {
        let g = gate(1, 0, 100, 0);
        g.push_all([(Priority::Normal, 1, "a"), (Priority::Normal, 2, "b")]);
        let (_, mut t) = admitted(g.take(Lane::Any, |_| Some(60)));
        t.resize(40);
        assert_eq!(
            g.usage(),
            Usage {
                slots: 1,
                bytes: 40
            }
        );
        t.leave_slot();
        t.leave_slot();
        assert_eq!(
            g.usage(),
            Usage {
                slots: 0,
                bytes: 40
            }
        );
        // b (60) fits next to a's 40 now that the slot is free.
        let (b, tb) = admitted(g.take(Lane::Any, |_| Some(60)));
        assert_eq!(b, "b");
        drop(t);
        drop(tb);
        assert_eq!(g.usage(), Usage::default());
        // The high-water mark: a's 60 alone, then a's 40 beside b's 60.
        assert_eq!(
            g.high_water(),
            HighWater {
                bytes: 100,
                partitions: 2
            }
        );
    }

    #[test]
    fn high_water_stays_within_the_budget_when_two_do_not_fit() {
        // Room for one partition of 60 and a half: the second waits for the first to end.
        let g = gate(4, 0, 90, 0);
        g.push_all([(Priority::Normal, 1, "a"), (Priority::Normal, 2, "b")]);
        let (_, mut ta) = admitted(g.take(Lane::Any, |_| Some(60)));
        let waiter = {
            let g = g.clone();
            std::thread::spawn(move || admitted(g.take(Lane::Any, |_| Some(60))))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "60 + 60 > 90: b waits");
        // Its slot freed (on a device) is not enough: its memory is held to the step's end.
        ta.leave_slot();
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "a's memory is still held");
        drop(ta);
        let (b, tb) = waiter.join().unwrap();
        assert_eq!((b, tb.bytes()), ("b", 60));
        assert_eq!(
            g.high_water(),
            HighWater {
                bytes: 60,
                partitions: 1
            }
        );
        // Growing past the bound after synthesis is the one way over (recorded as such).
        let mut tb = tb;
        tb.resize(95);
        assert_eq!(g.high_water().bytes, 95);
    }

    #[test]
    fn removal_and_close_wake_waiters() {
        let g = gate(2, 0, 100, 0);
        g.push_all([
            (Priority::Normal, 1, "first"),
            (Priority::Normal, 3, "small"),
        ]);
        let (_, _held) = admitted(g.take(Lane::Any, |_| Some(50)));
        g.push_all([(Priority::Normal, 2, "huge")]);
        // "huge" is the head and does not fit beside what is held; "small" behind it is not
        // started in its place, until "huge" leaves (its job cancelled).
        let size = |i: &&str| Some(if *i == "huge" { 90 } else { 10 });
        let waiter = {
            let g = g.clone();
            std::thread::spawn(move || admitted(g.take(Lane::Any, size)).0)
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "no backfill behind the head");
        assert_eq!(g.remove_where(|i| *i == "huge"), 1);
        assert_eq!(waiter.join().unwrap(), "small");
        assert!(g.is_empty());
        g.close();
        assert!(g.take(Lane::Any, |_| Some(1)).is_none());
        assert!(!g.push_all([(Priority::Low, 9, "late")]));
    }
}
