//! Locking shared by every layer (its own module so that low layers such as `args` and `stream`
//! need not import `host`).

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, ignoring poisoning (a panicking host callback must not wedge the agent).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A condition variable that makes no wake-up call while nobody waits. std's `notify_*` is a
/// system call every time (a futex wake), and here the notifying side (a run settling, an event
/// queued, a task posted) runs far more often than anyone blocks. A waiter counts itself while
/// holding the mutex, so a notifier that changed the state under that mutex and looks after
/// sees every waiter that could have missed the change.
#[derive(Default)]
pub(crate) struct Signal {
    condvar: std::sync::Condvar,
    waiting: std::sync::atomic::AtomicUsize,
}

/// A waiter's place in [`Signal::waiting`], given back however the wait ends.
struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Signal {
    fn waiting(&self) -> Waiting<'_> {
        self.waiting
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Waiting(&self.waiting)
    }

    /// [`std::sync::Condvar::wait_while`].
    pub(crate) fn wait_while<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        condition: impl FnMut(&mut T) -> bool,
    ) -> std::sync::LockResult<MutexGuard<'a, T>> {
        let _waiting = self.waiting();
        self.condvar.wait_while(guard, condition)
    }

    /// [`std::sync::Condvar::wait_timeout_while`].
    pub(crate) fn wait_timeout_while<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: std::time::Duration,
        condition: impl FnMut(&mut T) -> bool,
    ) -> std::sync::LockResult<(MutexGuard<'a, T>, std::sync::WaitTimeoutResult)> {
        let _waiting = self.waiting();
        self.condvar.wait_timeout_while(guard, timeout, condition)
    }

    /// Wakes every waiter, if any.
    pub(crate) fn notify_all(&self) {
        if self.waiting.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            self.condvar.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// No wake-up is lost while notifiers skip the call for an empty waiting count: waiters that
    /// arrive at any moment (before, during or after a change) all see the state they wait for.
    /// A lost wake-up would leave a waiter asleep past its generous timeout.
    #[test]
    fn waiters_see_every_change_under_contention() {
        for round in 0..200 {
            let shared = Arc::new((Mutex::new(0u32), Signal::default()));
            let waiters: Vec<_> = (0..4)
                .map(|i| {
                    let shared = shared.clone();
                    std::thread::spawn(move || {
                        let target = 1 + (i + round) % 3;
                        let (mutex, signal) = &*shared;
                        let guard = lock(mutex);
                        let (guard, timeout) = signal
                            .wait_timeout_while(guard, Duration::from_secs(10), |n| *n < target)
                            .unwrap();
                        assert!(!timeout.timed_out() && *guard >= target, "lost wake-up");
                    })
                })
                .collect();
            for _ in 0..3 {
                if round % 2 == 0 {
                    std::thread::yield_now();
                }
                let (mutex, signal) = &*shared;
                *lock(mutex) += 1;
                signal.notify_all();
            }
            for waiter in waiters {
                waiter.join().unwrap();
            }
            assert_eq!(
                shared.1.waiting.load(std::sync::atomic::Ordering::SeqCst),
                0
            );
        }
    }
}
