#ifndef CRECEIPTKITBASE64_H
#define CRECEIPTKITBASE64_H

#include <stddef.h>
#include <stdint.h>

/// Decodes base64 16 characters at a time (SSSE3 where the CPU has it), from the start of `input`
/// and while every character of a block is in the alphabet, writing 12 bytes for each block.
///
/// Returns how many characters it decoded: a multiple of 16, from 0 (no SSSE3, or an invalid
/// character in the first block) to `length`. It reads no byte past `input[length - 1]` and writes
/// none past `output[capacity - 1]`; the caller decodes the rest (the tail, the canonical checks
/// and any invalid character) and owns every rule of the encoding.
///
/// - Parameters:
///   - input: Base64 characters, without padding.
///   - length: How many of them may be read.
///   - output: Where the decoded bytes go.
///   - capacity: How many bytes may be written there.
///   - url: Nonzero for the URL alphabet (`-`, `_`), zero for the standard one (`+`, `/`).
size_t rk_base64_decode_blocks(const uint8_t *input, size_t length, uint8_t *output, size_t capacity, int url);

#endif
