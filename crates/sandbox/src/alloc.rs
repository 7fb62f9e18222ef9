//! A counting allocator for QuickJS: the heap limit is enforced here, so the engine knows for
//! certain when the guest ran out of memory (a guest can throw an "out of memory" error of its
//! own; it cannot set this flag).
//!
//! It also notes how deep the native stack was at each allocation. QuickJS builds the stack
//! trace of the `RangeError` it throws on a stack overflow at the bottom of the allowed stack,
//! and the prelude fixes traces at 64 frames, more than QuickJS's small-block arena serves, so
//! that allocation reaches this allocator. An uncaught stack-overflow error counts as one only
//! when an allocation really happened that deep: a guest that throws the same message from a
//! shallow stack gets a plain guest error.
//!
//! Finally, it is how a stop reaches native code. QuickJS asks its interrupt handler only every
//! ten thousand branches or calls, and one built-in call (`new Array(1e6).fill(1)`) can take
//! milliseconds, so a guest looping over such calls would overrun its deadline by seconds. Once
//! the execution is halted — deadline passed, cancelled, a limit hit — every allocation is
//! refused, such calls fail at once, and the next interrupt check ends the guest.
//!
//! A runtime is prepared before its execution is known (see `javascript.rs`), so the budget is
//! unlimited until [`Budget::arm`] sets the execution's limits.
#![expect(
    unsafe_code,
    reason = "rquickjs's Allocator trait is unsafe; every call delegates to RustAllocator"
)]

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rquickjs::allocator::{Allocator, RustAllocator};

use crate::CancelFlag;

/// Allocations between two looks at the clock: often enough to stop within a fraction of a
/// millisecond, rare enough to cost nothing measurable.
const CLOCK_EVERY: u32 = 64;

/// One runtime's heap budget and what it observed. Lives on the engine thread only.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: Cell<usize>,
    deadline: Cell<Instant>,
    cancel: RefCell<CancelFlag>,
    /// Where stack depth is measured from: an address on the engine thread above every frame of
    /// the interpreter (the stack grows down).
    stack_top: usize,
    used: Cell<usize>,
    peak: Cell<usize>,
    refused: Cell<bool>,
    /// Set once the execution is over for any reason: nothing more is allocated.
    halted: Cell<bool>,
    /// The deepest native stack (bytes below `stack_top`) seen at an allocation.
    deepest: Cell<usize>,
    until_clock: Cell<u32>,
}

impl Budget {
    /// An unlimited budget measuring depth from `stack_top` (see [`stack_address`]).
    pub(crate) fn new(stack_top: usize) -> Rc<Self> {
        Rc::new(Self {
            limit: Cell::new(usize::MAX),
            // Far enough never to be reached before `arm`.
            deadline: Cell::new(Instant::now() + Duration::from_secs(365 * 24 * 3600)),
            cancel: RefCell::new(CancelFlag::new()),
            stack_top,
            used: Cell::new(0),
            peak: Cell::new(0),
            refused: Cell::new(false),
            halted: Cell::new(false),
            deepest: Cell::new(0),
            until_clock: Cell::new(CLOCK_EVERY),
        })
    }

    /// Starts an execution: from now on at most `limit` bytes in all (what the runtime holds
    /// already included), until `deadline` or `cancel`.
    pub(crate) fn arm(&self, limit: usize, deadline: Instant, cancel: CancelFlag) {
        self.limit.set(limit);
        self.deadline.set(deadline);
        *self.cancel.borrow_mut() = cancel;
        self.peak.set(self.used.get());
        self.deepest.set(0);
    }

    /// When the execution must end.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline.get()
    }

    /// Whether the host asked the execution to stop.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancel.borrow().is_cancelled()
    }

    /// Whether an allocation was refused for going over the limit.
    pub(crate) fn limit_hit(&self) -> bool {
        self.refused.get()
    }

    /// Stops every further allocation of the guest (see the module docs).
    pub(crate) fn halt(&self) {
        self.halted.set(true);
    }

    /// The most the runtime held at once since [`Budget::arm`].
    pub(crate) fn peak(&self) -> usize {
        self.peak.get()
    }

    /// Whether an allocation happened close enough to a stack limit of `limit` bytes that the
    /// interpreter must have hit it.
    pub(crate) fn reached_depth(&self, limit: usize) -> bool {
        let margin = (limit / 8).min(64 * 1024);
        self.deepest.get() >= limit.saturating_sub(margin)
    }

    fn note_depth(&self) {
        let depth = self.stack_top.saturating_sub(stack_address());
        if depth > self.deepest.get() {
            self.deepest.set(depth);
        }
    }

    fn admit(&self, growth: usize) -> bool {
        if self.halted.get() {
            return false;
        }
        let until_clock = self.until_clock.get() - 1;
        if until_clock == 0 {
            self.until_clock.set(CLOCK_EVERY);
            if self.cancel.borrow().is_cancelled() || Instant::now() >= self.deadline.get() {
                self.halt();
                return false;
            }
        } else {
            self.until_clock.set(until_clock);
        }
        if self.used.get().saturating_add(growth) > self.limit.get() {
            self.refused.set(true);
            self.halt();
            return false;
        }
        true
    }

    fn record(&self, added: usize, removed: usize) {
        let used = (self.used.get() + added).saturating_sub(removed);
        self.used.set(used);
        if used > self.peak.get() {
            self.peak.set(used);
        }
    }
}

/// The address of a local on the current stack: where depth is measured from.
#[inline(never)]
pub(crate) fn stack_address() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// QuickJS's allocator for one runtime: RustAllocator plus a [`Budget`].
pub(crate) struct LimitedAllocator {
    budget: Rc<Budget>,
}

impl LimitedAllocator {
    /// An allocator that asks `budget` before every request that grows the heap.
    pub(crate) fn new(budget: Rc<Budget>) -> Self {
        Self { budget }
    }
}

// SAFETY: every method forwards to RustAllocator, which upholds the trait's contract; this
// wrapper only refuses requests (returning null, which QuickJS handles as out-of-memory) and
// counts the sizes RustAllocator reports for the blocks it hands out.
unsafe impl Allocator for LimitedAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        self.budget.note_depth();
        if !self.budget.admit(size) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.alloc(size);
        if !ptr.is_null() {
            // SAFETY: ptr was just returned by RustAllocator and is live.
            self.budget
                .record(unsafe { RustAllocator::usable_size(ptr) }, 0);
        }
        ptr
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        self.budget.note_depth();
        let Some(total) = count.checked_mul(size) else {
            return std::ptr::null_mut();
        };
        if !self.budget.admit(total) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.calloc(count, size);
        if !ptr.is_null() {
            // SAFETY: ptr was just returned by RustAllocator and is live.
            self.budget
                .record(unsafe { RustAllocator::usable_size(ptr) }, 0);
        }
        ptr
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: QuickJS only frees blocks this allocator handed out.
        let size = unsafe { RustAllocator::usable_size(ptr) };
        // SAFETY: as above.
        unsafe { RustAllocator.dealloc(ptr) };
        self.budget.record(0, size);
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        // SAFETY: QuickJS only reallocates blocks this allocator handed out.
        let old = unsafe { RustAllocator::usable_size(ptr) };
        if new_size > old && !self.budget.admit(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above.
        let moved = unsafe { RustAllocator.realloc(ptr, new_size) };
        if !moved.is_null() {
            // SAFETY: moved was just returned by RustAllocator and is live.
            self.budget
                .record(unsafe { RustAllocator::usable_size(moved) }, old);
        }
        moved
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: the caller passes a block this allocator handed out.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}
