/* SPDX-License-Identifier: MIT */
/* The libFuzzer entry point every target defines; replay.c drives it without libFuzzer. */
#ifndef ASCENDFS_FUZZ_H
#define ASCENDFS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
