//! A counting allocator for QuickJS: the heap limit is enforced here, so the engine knows for
//! certain when the guest ran out of memory (a guest can throw an "out of memory" error of its
//! own; it cannot set this flag).
//!
//! It also keeps the blocks it handed out at the bottom of the allowed native stack, while they
//! live. QuickJS builds the stack trace of the `RangeError` it throws on a stack overflow right
//! there, and the prelude fixes traces at 64 frames, more text than QuickJS's small-block arena
//! serves, so that string is one of these blocks; an error keeps the trace QuickJS recorded for
//! it whatever the guest does to its `stack` property. A thrown stack-overflow error counts as
//! one only when its recorded trace is such a block: a guest that throws the same message from a
//! shallow stack gets a plain guest error, also after a real overflow it caught, whose error
//! (and trace) is its own and no other.
//!
//! The check errs one way only. An overflow whose trace is short — a few frames, as in
//! synchronous recursion through async functions, recursion inside a built-in such as
//! `JSON.parse` of deeply nested text, or recursion through native frames on a small stack — gets
//! a trace the arena serves, which this allocator never sees: it is reported as the guest's
//! `RangeError: Maximum call stack size exceeded`, with its position. A deepest-allocation mark
//! would catch those too, but a guest that recursed deep once (even caught) could then claim any
//! later error was an overflow.
//!
//! Finally, it is how a stop reaches native code. QuickJS asks its interrupt handler only every
//! ten thousand branches or calls, and one built-in call (`new Array(1e6).fill(1)`) can take
//! milliseconds, so a guest looping over such calls would overrun its deadline by seconds. Once
//! the execution is halted — deadline passed, cancelled, a limit hit — every allocation is
//! refused, such calls fail at once, and the next interrupt check ends the guest. That check
//! gets a few small allocations of grace ([`Budget::interrupt`]): QuickJS ends the guest by
//! throwing an uncatchable `InternalError`, and when it cannot allocate that error it throws
//! `null` instead, which a guest's `catch` would swallow, looping on.
//!
//! A runtime is prepared before its execution is known (see `javascript/mod.rs`), so the budget is
//! unlimited until [`Budget::arm`] sets the execution's limits.
#![expect(
    unsafe_code,
    reason = "rquickjs's Allocator trait is unsafe; every call delegates to RustAllocator"
)]

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use rquickjs::allocator::{Allocator, RustAllocator};

use crate::CancelFlag;

/// Allocations between two looks at the clock: often enough to stop within a fraction of a
/// millisecond, rare enough to cost nothing measurable.
const CLOCK_EVERY: u32 = 64;
/// Allocations the interrupt that stops a halted guest may still make: the uncatchable error
/// object, its message and properties, and its stack trace.
const INTERRUPT_GRACE_ALLOCATIONS: u32 = 32;
/// The largest of those allocations: the error's parts are small.
const INTERRUPT_GRACE_BYTES: usize = 4096;
/// Live blocks from the bottom of the stack kept at most. A guest that allocates this many and
/// keeps them only makes its own later overflow a plain guest error.
const MAX_DEEP_BLOCKS: usize = 1024;
/// How far above the stack limit an allocation still counts as made at it: QuickJS measures the
/// stack from a slightly different top than [`stack_address`] on the engine thread.
const MAX_DEPTH_MARGIN: usize = 64 * 1024;

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
    /// Allocations still admitted while halted (see [`Budget::interrupt`]).
    grace: Cell<u32>,
    /// The native stack depth (bytes below `stack_top`) from which an allocation is made at the
    /// stack limit; `usize::MAX` until [`Budget::arm`].
    deep_from: Cell<usize>,
    /// Blocks made at the stack limit and not freed yet: start address → usable size.
    deep_blocks: RefCell<BTreeMap<usize, usize>>,
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
            grace: Cell::new(0),
            deep_from: Cell::new(usize::MAX),
            deep_blocks: RefCell::new(BTreeMap::new()),
            until_clock: Cell::new(CLOCK_EVERY),
        })
    }

    /// Starts an execution: from now on at most `limit` bytes in all (what the runtime holds
    /// already included), until `deadline` or `cancel`, on a native stack of `stack_limit`
    /// bytes.
    pub(crate) fn arm(
        &self,
        limit: usize,
        deadline: Instant,
        cancel: CancelFlag,
        stack_limit: usize,
    ) {
        self.limit.set(limit);
        self.deadline.set(deadline);
        *self.cancel.borrow_mut() = cancel;
        self.peak.set(self.used.get());
        let margin = (stack_limit / 8).min(MAX_DEPTH_MARGIN);
        self.deep_from.set(stack_limit.saturating_sub(margin));
        self.deep_blocks.borrow_mut().clear();
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

    /// Halts the guest from the interrupt handler, which is about to end it: the next few small
    /// allocations, within the memory limit, are still admitted so that QuickJS can make the
    /// uncatchable error that ends the guest rather than a catchable `null`.
    pub(crate) fn interrupt(&self) {
        self.halt();
        self.grace.set(INTERRUPT_GRACE_ALLOCATIONS);
    }

    /// The most the runtime held at once since [`Budget::arm`].
    pub(crate) fn peak(&self) -> usize {
        self.peak.get()
    }

    /// Whether `address` lies in a live block made at the stack limit: so close to it that the
    /// interpreter must have hit it there.
    pub(crate) fn made_at_stack_limit(&self, address: usize) -> bool {
        self.deep_blocks
            .borrow()
            .range(..=address)
            .next_back()
            .is_some_and(|(&start, &size)| address < start.saturating_add(size))
    }

    /// Keeps `block` when it is being made at the stack limit.
    fn note_block(&self, block: *mut u8, size: usize) {
        let depth = self.stack_top.saturating_sub(stack_address());
        if depth < self.deep_from.get() {
            return;
        }
        let mut blocks = self.deep_blocks.borrow_mut();
        if blocks.len() < MAX_DEEP_BLOCKS {
            blocks.insert(block as usize, size);
        }
    }

    /// Forgets `block`, which is being freed or moved.
    fn forget_block(&self, block: *mut u8) {
        let mut blocks = self.deep_blocks.borrow_mut();
        if !blocks.is_empty() {
            blocks.remove(&(block as usize));
        }
    }

    fn admit(&self, growth: usize) -> bool {
        if self.halted.get() {
            let grace = self.grace.get();
            if grace == 0 || growth > INTERRUPT_GRACE_BYTES {
                return false;
            }
            self.grace.set(grace - 1);
            return self.used.get().saturating_add(growth) <= self.limit.get();
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
pub fn stack_address() -> usize {
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
        if !self.budget.admit(size) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.alloc(size);
        if !ptr.is_null() {
            // SAFETY: ptr was just returned by RustAllocator and is live.
            let usable = unsafe { RustAllocator::usable_size(ptr) };
            self.budget.record(usable, 0);
            self.budget.note_block(ptr, usable);
        }
        ptr
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            return std::ptr::null_mut();
        };
        if !self.budget.admit(total) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.calloc(count, size);
        if !ptr.is_null() {
            // SAFETY: ptr was just returned by RustAllocator and is live.
            let usable = unsafe { RustAllocator::usable_size(ptr) };
            self.budget.record(usable, 0);
            self.budget.note_block(ptr, usable);
        }
        ptr
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: QuickJS only frees blocks this allocator handed out.
        let size = unsafe { RustAllocator::usable_size(ptr) };
        self.budget.forget_block(ptr);
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
            let usable = unsafe { RustAllocator::usable_size(moved) };
            self.budget.record(usable, old);
            self.budget.forget_block(ptr);
            self.budget.note_block(moved, usable);
        }
        moved
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: the caller passes a block this allocator handed out.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}
