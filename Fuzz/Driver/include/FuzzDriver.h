#ifndef BATON_FUZZ_DRIVER_H
#define BATON_FUZZ_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/// Runs libFuzzer's driver (`LLVMFuzzerRunDriver`) with the process's arguments and `callback` as
/// the target. SwiftPM names an executable's entry point after its module, so libFuzzer's own
/// `main` cannot be used; each target's `main` calls this instead.
int baton_fuzz_run(int argc, char **argv, int (*callback)(const uint8_t *data, size_t size));

#endif
