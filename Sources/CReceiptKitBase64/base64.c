#include "CReceiptKitBase64.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/// Whether the CPU has SSSE3 (`pshufb`, `pmaddubsw`): read once, before main, so that no thread
/// ever races to set it.
static int has_ssse3 = 0;

__attribute__((constructor)) static void rk_base64_detect(void) {
    __builtin_cpu_init();
    has_ssse3 = __builtin_cpu_supports("ssse3") ? 1 : 0;
}

/// Each 16-character block: classify every character by range (signed compares, so a byte of
/// 0x80 or more is in no range), check all 16 are in the alphabet, turn each into its 6-bit value
/// with the offset of its range, then pack: pairs of values into 12 bits (`pmaddubsw`), pairs of
/// those into 24 bits per 32-bit lane (`pmaddwd`), and the three bytes of each lane in big-endian
/// order to the front (`pshufb`). The 16-byte store writes 4 bytes past the 12 decoded, which
/// the next block (or the caller) overwrites, so it runs only while 16 bytes of room remain.
__attribute__((target("ssse3")))
static size_t decode_ssse3(const uint8_t *input, size_t length, uint8_t *output, size_t capacity, int url) {
    const __m128i upper_low = _mm_set1_epi8('A' - 1), upper_high = _mm_set1_epi8('Z' + 1);
    const __m128i lower_low = _mm_set1_epi8('a' - 1), lower_high = _mm_set1_epi8('z' + 1);
    const __m128i digit_low = _mm_set1_epi8('0' - 1), digit_high = _mm_set1_epi8('9' + 1);
    const char sixty_two = url ? '-' : '+', sixty_three = url ? '_' : '/';
    const __m128i is_62 = _mm_set1_epi8(sixty_two), is_63 = _mm_set1_epi8(sixty_three);
    const __m128i upper_offset = _mm_set1_epi8(-'A'), lower_offset = _mm_set1_epi8(26 - 'a');
    const __m128i digit_offset = _mm_set1_epi8(52 - '0');
    const __m128i offset_62 = _mm_set1_epi8((char)(62 - sixty_two)), offset_63 = _mm_set1_epi8((char)(63 - sixty_three));
    const __m128i pair_weights = _mm_set1_epi32(0x01400140);   // 64, 1 per 16-bit lane
    const __m128i quad_weights = _mm_set1_epi32(0x00011000);   // 4096, 1 per 32-bit lane
    const __m128i big_endian = _mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    size_t read = 0, written = 0;
    while (length - read >= 16 && capacity - written >= 16) {
        const __m128i text = _mm_loadu_si128((const __m128i *)(input + read));
        const __m128i upper = _mm_and_si128(_mm_cmpgt_epi8(text, upper_low), _mm_cmplt_epi8(text, upper_high));
        const __m128i lower = _mm_and_si128(_mm_cmpgt_epi8(text, lower_low), _mm_cmplt_epi8(text, lower_high));
        const __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(text, digit_low), _mm_cmplt_epi8(text, digit_high));
        const __m128i sixty_twos = _mm_cmpeq_epi8(text, is_62), sixty_threes = _mm_cmpeq_epi8(text, is_63);
        const __m128i valid = _mm_or_si128(_mm_or_si128(upper, lower), _mm_or_si128(digit, _mm_or_si128(sixty_twos, sixty_threes)));
        if (_mm_movemask_epi8(valid) != 0xFFFF) break;
        const __m128i offset = _mm_or_si128(
            _mm_or_si128(_mm_and_si128(upper, upper_offset), _mm_and_si128(lower, lower_offset)),
            _mm_or_si128(_mm_and_si128(digit, digit_offset),
                         _mm_or_si128(_mm_and_si128(sixty_twos, offset_62), _mm_and_si128(sixty_threes, offset_63))));
        const __m128i values = _mm_add_epi8(text, offset);
        const __m128i pairs = _mm_maddubs_epi16(values, pair_weights);
        const __m128i quads = _mm_madd_epi16(pairs, quad_weights);
        _mm_storeu_si128((__m128i *)(output + written), _mm_shuffle_epi8(quads, big_endian));
        read += 16;
        written += 12;
    }
    return read;
}
#endif

size_t rk_base64_decode_blocks(const uint8_t *input, size_t length, uint8_t *output, size_t capacity, int url) {
#if defined(__x86_64__) || defined(__i386__)
    if (has_ssse3) return decode_ssse3(input, length, output, capacity, url);
#endif
    (void)input;
    (void)length;
    (void)output;
    (void)capacity;
    (void)url;
    return 0;
}
