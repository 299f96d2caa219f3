#ifndef RECEIPTKIT_SERVER_ZLIB_SHIM_H
#define RECEIPTKIT_SERVER_ZLIB_SHIM_H

/* zlib for receiptkit-server: the JSON the store keeps of each input and ledger copy, deflated
 * against a preset dictionary (Store/Compression/DeflatedJSON.swift). A shim because zlib's
 * initialisers are macros Swift cannot call, and so that a stream lives in one function. The
 * store's JSON and the raw bytes of its inputs are deflated (Store/Deflate.swift). */

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

/* The most bytes rks_deflate can write for `length` bytes of input. */
static inline size_t rks_deflate_bound(size_t length) {
    return (size_t)compressBound((uLong)length);
}

/* The window of the store's deflate streams: 8 KB, room for the 2.8 KB dictionary and a record
 * after it. A larger window finds nothing more in the store's documents and costs more to set up
 * for each one (zlib allocates and clears it per stream): 32 KB took five times as long. */
#define RKS_WINDOW_BITS 13

/* Raw deflate (no zlib header or checksum) of `input` at the best compression, with `dictionary`
 * preset unless it is empty, into `output`, whose capacity is `*output_length` (rks_deflate_bound of the input's);
 * `*output_length` becomes the bytes written. Returns 1 on success, 0 otherwise. */
static inline int rks_deflate(const unsigned char *input, size_t input_length, const unsigned char *dictionary,
                              size_t dictionary_length, unsigned char *output, size_t *output_length) {
    if (input_length > UINT32_MAX || dictionary_length > UINT32_MAX || *output_length > UINT32_MAX) return 0;
    z_stream stream;
    memset(&stream, 0, sizeof stream);
    if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, -RKS_WINDOW_BITS, 7, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
    int ok = dictionary_length == 0 || deflateSetDictionary(&stream, dictionary, (uInt)dictionary_length) == Z_OK;
    stream.next_in = (Bytef *)input;
    stream.avail_in = (uInt)input_length;
    stream.next_out = output;
    stream.avail_out = (uInt)*output_length;
    ok = ok && deflate(&stream, Z_FINISH) == Z_STREAM_END;
    *output_length = stream.total_out;
    deflateEnd(&stream);
    return ok;
}

/* Inflates raw deflate data made with `dictionary` preset (none when it is empty) into `output`, which it must fill
 * exactly: returns 1 when the stream ends after exactly `output_length` bytes with all of `input`
 * read, 0 when it is damaged, ends early or holds more (Z_FINISH then finds no room: Z_BUF_ERROR). */
static inline int rks_inflate(const unsigned char *input, size_t input_length, const unsigned char *dictionary,
                              size_t dictionary_length, unsigned char *output, size_t output_length) {
    if (input_length > UINT32_MAX || dictionary_length > UINT32_MAX || output_length > UINT32_MAX) return 0;
    z_stream stream;
    memset(&stream, 0, sizeof stream);
    if (inflateInit2(&stream, -RKS_WINDOW_BITS) != Z_OK) return 0;
    int ok = dictionary_length == 0 || inflateSetDictionary(&stream, dictionary, (uInt)dictionary_length) == Z_OK;
    stream.next_in = (Bytef *)input;
    stream.avail_in = (uInt)input_length;
    stream.next_out = output;
    stream.avail_out = (uInt)output_length;
    ok = ok && inflate(&stream, Z_FINISH) == Z_STREAM_END && stream.total_out == output_length && stream.avail_in == 0;
    inflateEnd(&stream);
    return ok;
}

#endif
