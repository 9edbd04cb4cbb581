#ifndef BATON_C_THREAD_SANITIZER_H
#define BATON_C_THREAD_SANITIZER_H

// ThreadSanitizer's annotations, declared weak: in a build with -sanitize=thread they are its
// runtime's, anywhere else they are null and the calls below do nothing.
void __tsan_acquire(void *addr) __attribute__((weak));
void __tsan_release(void *addr) __attribute__((weak));

/// Tells ThreadSanitizer that the lock at `addr` was taken: what its last holder did happened
/// before what this thread does now.
static inline void baton_tsan_acquire(void *addr) {
    if (__tsan_acquire) __tsan_acquire(addr);
}

/// Tells ThreadSanitizer that the lock at `addr` is about to be let go.
static inline void baton_tsan_release(void *addr) {
    if (__tsan_release) __tsan_release(addr);
}

#endif
