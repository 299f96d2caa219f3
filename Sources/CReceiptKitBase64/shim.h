#ifndef CRECEIPTKITBASE64_SHIM_H
#define CRECEIPTKITBASE64_SHIM_H

// Header only: the functions are compiled into ReceiptKit itself (the Swift compiler's Clang),
// with its own debug information, and nothing is linked.

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/// Each 16-character block, after Wojciech Muła's SSSE3 decoder: a character's high nibble picks
/// one class bit (`high_classes`) and its low nibble the classes in which it is *not* in the
/// alphabet (`low_invalid`), so a character is invalid exactly when the two share a bit (every
/// high nibble outside 2–7, 0x80 and up included, has a class no low nibble allows). Its 6-bit
/// value is the character plus an offset picked by the high nibble (`offsets`), except for the one
/// character whose high nibble it shares with letters (`_` in the URL alphabet, `/` in the
/// standard one), whose offset sits at index 1. Then the values are packed: pairs into 12 bits
/// (`pmaddubsw`), pairs of those into 24 bits per 32-bit lane (`pmaddwd`), and the three bytes of
/// each lane to the front in big-endian order (`pshufb`). The 16-byte store writes 4 bytes past
/// the 12 decoded, which the next block (or the caller) overwrites, so it runs only while 16
/// bytes of room remain. Tests compare it with the scalar decoder for every byte at every
/// position.
__attribute__((target("ssse3")))
static inline size_t rk_base64_decode_ssse3(const uint8_t *input, size_t length, uint8_t *output, size_t capacity, int url) {
    // Class bits: 0x01 high nibble 2, 0x02 digits, 0x04 'A'–'O' and 'a'–'o', 0x08 'P'–'Z' (and
    // 'p'–'z' in the standard alphabet), 0x10 'p'–'z' in the URL one, 0x20 no character.
    const __m128i high_classes = url
        ? _mm_setr_epi8(0x20, 0x20, 0x01, 0x02, 0x04, 0x08, 0x04, 0x10, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20)
        : _mm_setr_epi8(0x20, 0x20, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20);
    const __m128i low_invalid = url
        ? _mm_setr_epi8(0x25, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21, 0x23, 0x3B, 0x3B, 0x3A, 0x3B, 0x33)
        : _mm_setr_epi8(0x25, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21, 0x23, 0x2A, 0x2B, 0x2B, 0x2B, 0x2A);
    const __m128i offsets = url
        ? _mm_setr_epi8(0, -32, 17, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0)
        : _mm_setr_epi8(0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
    // `_` (high nibble 5) moves to offset index 1 by adding -4; `/` (high nibble 2) by adding -1.
    const __m128i shared = _mm_set1_epi8(url ? '_' : '/');
    const __m128i shared_shift = _mm_set1_epi8(url ? -4 : -1);
    const __m128i nibble = _mm_set1_epi8(0x0F);
    const __m128i zero = _mm_setzero_si128();
    const __m128i pair_weights = _mm_set1_epi32(0x01400140);   // 64, 1 per 16-bit lane
    const __m128i quad_weights = _mm_set1_epi32(0x00011000);   // 4096, 1 per 32-bit lane
    const __m128i big_endian = _mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    size_t read = 0, written = 0;
    while (length - read >= 16 && capacity - written >= 16) {
        const __m128i text = _mm_loadu_si128((const __m128i *)(input + read));
        const __m128i high = _mm_and_si128(_mm_srli_epi32(text, 4), nibble);
        const __m128i low = _mm_and_si128(text, nibble);
        const __m128i invalid = _mm_and_si128(_mm_shuffle_epi8(low_invalid, low), _mm_shuffle_epi8(high_classes, high));
        if (_mm_movemask_epi8(_mm_cmpeq_epi8(invalid, zero)) != 0xFFFF) break;
        const __m128i index = _mm_add_epi8(high, _mm_and_si128(_mm_cmpeq_epi8(text, shared), shared_shift));
        const __m128i values = _mm_add_epi8(text, _mm_shuffle_epi8(offsets, index));
        const __m128i pairs = _mm_maddubs_epi16(values, pair_weights);
        const __m128i quads = _mm_madd_epi16(pairs, quad_weights);
        _mm_storeu_si128((__m128i *)(output + written), _mm_shuffle_epi8(quads, big_endian));
        read += 16;
        written += 12;
    }
    return read;
}
#endif

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
static inline size_t rk_base64_decode_blocks(const uint8_t *input, size_t length, uint8_t *output, size_t capacity, int url) {
#if defined(__x86_64__) || defined(__i386__)
    // The CPU's features, read by the runtime's start-up code (libgcc, compiler-rt) before main.
    if (__builtin_cpu_supports("ssse3")) return rk_base64_decode_ssse3(input, length, output, capacity, url);
#endif
    (void)input;
    (void)length;
    (void)output;
    (void)capacity;
    (void)url;
    return 0;
}

#endif
