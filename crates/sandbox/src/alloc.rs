//! A counting allocator for QuickJS: the heap limit is enforced here, so the engine knows for
//! certain when the guest ran out of memory (a guest can throw an "out of memory" error of its
//! own; it cannot set this flag).
//!
//! It also notes how deep the native stack was at each allocation. QuickJS allocates the
//! `RangeError` it throws on a stack overflow at the bottom of the allowed stack, so an uncaught
//! stack-overflow error counts as one only when an allocation really happened that deep: a guest
//! that throws the same message from a shallow stack gets a plain guest error.
//!
//! Finally, it is how a stop reaches native code. QuickJS asks its interrupt handler only every
//! ten thousand branches or calls, and one built-in call (`new Array(1e6).fill(1)`) can take
//! milliseconds, so a guest looping over such calls would overrun its deadline by seconds. Once
//! the execution is halted — deadline passed, cancelled, a limit hit — every allocation is
//! refused, such calls fail at once, and the next interrupt check ends the guest.
#![expect(
    unsafe_code,
    reason = "rquickjs's Allocator trait is unsafe; every call delegates to RustAllocator"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use rquickjs::allocator::{Allocator, RustAllocator};

use crate::CancelFlag;

/// Allocations between two looks at the clock: often enough to stop within a fraction of a
/// millisecond, rare enough to cost nothing measurable.
const CLOCK_EVERY: u32 = 64;

/// Shared view of one runtime's heap, readable after the runtime is gone.
#[derive(Debug, Default)]
pub(crate) struct HeapMeter {
    used: AtomicUsize,
    peak: AtomicUsize,
    refused: AtomicBool,
    /// Set once the execution is over for any reason: nothing more is allocated.
    halted: AtomicBool,
    /// The deepest native stack (bytes below the engine's entry) seen at an allocation.
    deepest: AtomicUsize,
}

impl HeapMeter {
    /// Whether an allocation was refused for going over the limit.
    pub(crate) fn limit_hit(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }

    /// Stops every further allocation of the guest (see the module docs).
    pub(crate) fn halt(&self) {
        self.halted.store(true, Ordering::Relaxed);
    }

    /// The most the guest held at once.
    pub(crate) fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Whether an allocation happened close enough to a stack limit of `limit` bytes that the
    /// interpreter must have hit it.
    pub(crate) fn reached_depth(&self, limit: usize) -> bool {
        let margin = (limit / 8).min(64 * 1024);
        self.deepest.load(Ordering::Relaxed) >= limit.saturating_sub(margin)
    }
}

/// The address of a local on the current stack: where depth is measured from.
#[inline(never)]
pub(crate) fn stack_address() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// QuickJS's allocator for one runtime: RustAllocator plus a byte budget.
pub(crate) struct LimitedAllocator {
    limit: usize,
    meter: Arc<HeapMeter>,
    stack_top: usize,
    deadline: Instant,
    cancel: CancelFlag,
    until_clock: u32,
}

impl LimitedAllocator {
    /// An allocator granting `limit` bytes until `deadline` or `cancel`; depth is measured from
    /// `stack_top`, an address taken on the engine thread before the runtime is created (the
    /// stack grows down).
    pub(crate) fn new(
        limit: usize,
        meter: Arc<HeapMeter>,
        stack_top: usize,
        deadline: Instant,
        cancel: CancelFlag,
    ) -> Self {
        Self {
            limit,
            meter,
            stack_top,
            deadline,
            cancel,
            until_clock: CLOCK_EVERY,
        }
    }

    fn note_depth(&self) {
        let depth = self.stack_top.saturating_sub(stack_address());
        if depth > self.meter.deepest.load(Ordering::Relaxed) {
            self.meter.deepest.store(depth, Ordering::Relaxed);
        }
    }

    fn admit(&mut self, growth: usize) -> bool {
        if self.meter.halted.load(Ordering::Relaxed) {
            return false;
        }
        self.until_clock -= 1;
        if self.until_clock == 0 {
            self.until_clock = CLOCK_EVERY;
            if self.cancel.is_cancelled() || Instant::now() >= self.deadline {
                self.meter.halt();
                return false;
            }
        }
        let used = self.meter.used.load(Ordering::Relaxed);
        if used.saturating_add(growth) > self.limit {
            self.meter.refused.store(true, Ordering::Relaxed);
            self.meter.halt();
            return false;
        }
        true
    }

    fn record(&self, added: usize, removed: usize) {
        let used = self.meter.used.load(Ordering::Relaxed) + added - removed;
        self.meter.used.store(used, Ordering::Relaxed);
        if used > self.meter.peak.load(Ordering::Relaxed) {
            self.meter.peak.store(used, Ordering::Relaxed);
        }
    }
}

// SAFETY: every method forwards to RustAllocator, which upholds the trait's contract; this
// wrapper only refuses requests (returning null, which QuickJS handles as out-of-memory) and
// counts the sizes RustAllocator reports for the blocks it hands out.
unsafe impl Allocator for LimitedAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        self.note_depth();
        if !self.admit(size) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.alloc(size);
        if !ptr.is_null() {
            // SAFETY: ptr was just returned by RustAllocator and is live.
            self.record(unsafe { RustAllocator::usable_size(ptr) }, 0);
        }
        ptr
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        self.note_depth();
        let Some(total) = count.checked_mul(size) else {
            return std::ptr::null_mut();
        };
        if !self.admit(total) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.calloc(count, size);
        if !ptr.is_null() {
            // SAFETY: ptr was just returned by RustAllocator and is live.
            self.record(unsafe { RustAllocator::usable_size(ptr) }, 0);
        }
        ptr
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: QuickJS only frees blocks this allocator handed out.
        let size = unsafe { RustAllocator::usable_size(ptr) };
        // SAFETY: as above.
        unsafe { RustAllocator.dealloc(ptr) };
        self.record(0, size);
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        // SAFETY: QuickJS only reallocates blocks this allocator handed out.
        let old = unsafe { RustAllocator::usable_size(ptr) };
        if new_size > old && !self.admit(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above.
        let moved = unsafe { RustAllocator.realloc(ptr, new_size) };
        if !moved.is_null() {
            // SAFETY: moved was just returned by RustAllocator and is live.
            self.record(unsafe { RustAllocator::usable_size(moved) }, old);
        }
        moved
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: the caller passes a block this allocator handed out.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}
