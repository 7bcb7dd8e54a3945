//! A blocking priority queue: highest priority first, FIFO within a priority. Used for
//! synthesized partitions waiting for a device and proven ones waiting for finalize. Both are
//! unbounded here: what enters the prove queue was given its room before synthesis (gate.rs),
//! so no producer ever blocks holding a finished partition.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::job::Priority;

/// One queued item; the heap's order is the service order (shared with gate.rs).
pub(crate) struct Entry<T> {
    pub priority: Priority,
    /// Arrival order: lower first within a priority.
    pub seq: u64,
    pub item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority
            .cmp(&other.priority)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

struct State<T> {
    heap: BinaryHeap<Entry<T>>,
    closed: bool,
}

/// What [`PriorityQueue::pop_within`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Popped<T> {
    Item(T),
    /// Nothing arrived in time; the queue is open.
    TimedOut,
    /// Closed and drained.
    Closed,
}

pub struct PriorityQueue<T> {
    state: Mutex<State<T>>,
    /// Signalled when an item arrives or the queue closes.
    not_empty: Condvar,
    /// Signalled when an item leaves.
    not_full: Condvar,
    capacity: usize,
}

impl<T> PriorityQueue<T> {
    pub fn new(capacity: usize) -> Self {
        PriorityQueue {
            state: Mutex::new(State {
                heap: BinaryHeap::new(),
                closed: false,
            }),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            capacity: capacity.max(1),
        }
    }

    /// Add an item, waiting for room. `seq` orders items of equal priority. Returns the item
    /// back if the queue is closed.
    pub fn push_wait(&self, priority: Priority, seq: u64, item: T) -> Result<(), T> {
        let mut st = self.state.lock();
        while st.heap.len() >= self.capacity && !st.closed {
            self.not_full.wait(&mut st);
        }
        if st.closed {
            return Err(item);
        }
        st.heap.push(Entry {
            priority,
            seq,
            item,
        });
        self.not_empty.notify_one();
        Ok(())
    }

    /// Add items without waiting (admission counts its own bound). Fails if closed.
    pub fn push_all(&self, items: impl IntoIterator<Item = (Priority, u64, T)>) -> bool {
        let mut st = self.state.lock();
        if st.closed {
            return false;
        }
        for (priority, seq, item) in items {
            st.heap.push(Entry {
                priority,
                seq,
                item,
            });
        }
        self.not_empty.notify_all();
        true
    }

    /// The most urgent item, waiting for one. None once the queue is closed and drained.
    pub fn pop(&self) -> Option<T> {
        let mut st = self.state.lock();
        loop {
            if let Some(e) = st.heap.pop() {
                self.not_full.notify_one();
                return Some(e.item);
            }
            if st.closed {
                return None;
            }
            self.not_empty.wait(&mut st);
        }
    }

    /// As [`Self::pop`], waiting at most `wait` for an item.
    pub fn pop_within(&self, wait: Duration) -> Popped<T> {
        let deadline = Instant::now() + wait;
        let mut st = self.state.lock();
        let mut timed_out = false;
        loop {
            if let Some(e) = st.heap.pop() {
                self.not_full.notify_one();
                return Popped::Item(e.item);
            }
            if st.closed {
                return Popped::Closed;
            }
            if timed_out {
                return Popped::TimedOut;
            }
            timed_out = self.not_empty.wait_until(&mut st, deadline).timed_out();
        }
    }

    /// The most urgent item if `pred` accepts it (its priority and the item), without
    /// waiting: None when the queue is empty or its head is refused.
    pub fn pop_if(&self, pred: impl Fn(Priority, &T) -> bool) -> Option<T> {
        let mut st = self.state.lock();
        let head = st.heap.peek()?;
        if !pred(head.priority, &head.item) {
            return None;
        }
        let e = st.heap.pop()?;
        self.not_full.notify_one();
        Some(e.item)
    }

    /// Whether the most urgent item is one `pred` accepts (a look: nothing is taken).
    pub fn head_is(&self, pred: impl Fn(Priority, &T) -> bool) -> bool {
        let st = self.state.lock();
        st.heap.peek().is_some_and(|h| pred(h.priority, &h.item))
    }

    /// Remove every item matching `pred` (cancellation); returns how many were removed.
    pub fn remove_where(&self, pred: impl Fn(&T) -> bool) -> usize {
        let mut st = self.state.lock();
        let before = st.heap.len();
        let kept: Vec<Entry<T>> = std::mem::take(&mut st.heap)
            .into_vec()
            .into_iter()
            .filter(|e| !pred(&e.item))
            .collect();
        st.heap = BinaryHeap::from(kept);
        let removed = before - st.heap.len();
        if removed > 0 {
            self.not_full.notify_all();
        }
        removed
    }

    /// Take every item out (shutdown), most urgent first.
    pub fn drain(&self) -> Vec<T> {
        let mut st = self.state.lock();
        let mut out = Vec::with_capacity(st.heap.len());
        while let Some(e) = st.heap.pop() {
            out.push(e.item);
        }
        self.not_full.notify_all();
        out
    }

    pub fn len(&self) -> usize {
        self.state.lock().heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stop accepting items and wake every waiter; `pop` drains what is left, then None.
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.not_empty.notify_all();
        self.not_full.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn priority_then_fifo() {
        let q = PriorityQueue::new(16);
        q.push_all([
            (Priority::Normal, 1, "n1"),
            (Priority::Low, 2, "l1"),
            (Priority::Normal, 3, "n2"),
            (Priority::Critical, 4, "c1"),
            (Priority::High, 5, "h1"),
        ]);
        let order: Vec<_> = (0..5).map(|_| q.pop().unwrap()).collect();
        assert_eq!(order, ["c1", "h1", "n1", "n2", "l1"]);
    }

    #[test]
    fn pop_if_takes_only_an_accepted_head_and_head_is_looks() {
        let q = PriorityQueue::new(16);
        assert_eq!(q.pop_if(|_, _| true), None::<&str>, "empty");
        q.push_all([(Priority::Normal, 1, "n1"), (Priority::Critical, 2, "c1")]);
        let critical = |p: Priority, _: &&str| p == Priority::Critical;
        assert!(q.head_is(critical), "the head is CRITICAL");
        assert_eq!(q.len(), 2, "looking takes nothing");
        assert_eq!(q.pop_if(critical), Some("c1"));
        assert!(!q.head_is(critical));
        // The head is now NORMAL: refused, and left where it was.
        assert_eq!(q.pop_if(critical), None);
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop_if(|_, item| *item == "n1"), Some("n1"));
        assert!(q.is_empty());
    }

    #[test]
    fn bounded_push_waits_for_room_and_close_wakes() {
        let q = Arc::new(PriorityQueue::new(1));
        q.push_wait(Priority::Normal, 0, 1).unwrap();
        let q2 = q.clone();
        let t = std::thread::spawn(move || q2.push_wait(Priority::Normal, 1, 2));
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(q.len(), 1, "second push must wait");
        assert_eq!(q.pop(), Some(1));
        t.join().unwrap().unwrap();
        assert_eq!(q.pop(), Some(2));
        q.close();
        assert_eq!(q.pop(), None);
        assert_eq!(q.push_wait(Priority::Low, 2, 3), Err(3));
    }

    #[test]
    fn pop_within_times_out_takes_an_arrival_and_sees_the_close() {
        let q = Arc::new(PriorityQueue::new(4));
        let t = Instant::now();
        assert_eq!(q.pop_within(Duration::from_millis(60)), Popped::TimedOut);
        assert!(
            t.elapsed() >= Duration::from_millis(60),
            "{:?}",
            t.elapsed()
        );
        let q2 = q.clone();
        let pusher = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            q2.push_all([(Priority::Normal, 0, 7)]);
        });
        assert_eq!(q.pop_within(Duration::from_secs(30)), Popped::Item(7));
        pusher.join().unwrap();
        q.push_all([(Priority::Normal, 1, 8)]);
        q.close();
        assert_eq!(
            q.pop_within(Duration::ZERO),
            Popped::Item(8),
            "drained first"
        );
        assert_eq!(q.pop_within(Duration::from_secs(30)), Popped::Closed);
    }

    #[test]
    fn remove_where_cancels() {
        let q = PriorityQueue::new(8);
        q.push_all((0..6).map(|i| (Priority::Normal, i, i)));
        assert_eq!(q.remove_where(|x| x % 2 == 0), 3);
        let rest: Vec<_> = (0..3).map(|_| q.pop().unwrap()).collect();
        assert_eq!(rest, [1, 3, 5]);
    }
}
