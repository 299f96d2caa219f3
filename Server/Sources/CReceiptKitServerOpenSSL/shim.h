#ifndef RECEIPTKIT_SERVER_OPENSSL_SHIM_H
#define RECEIPTKIT_SERVER_OPENSSL_SHIM_H

/* libcrypto for receiptkit-server: the signature of the webhooks it sends, the digests of its API
 * tokens and the randomness of new ones. (ReceiptKit's own OpenSSL module is internal to the
 * library, which verifies and never signs webhooks.) */

#include <stddef.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

/* HMAC-SHA256 of `data` under `key` into `out` (32 bytes), through OpenSSL 3's one-shot MAC
 * (EVP_Q_mac; the HMAC_* functions are deprecated): a shim because Swift cannot name the
 * algorithm strings' lifetime or the NULL library context and properties as plainly.
 * Returns 1 when 32 bytes were written, 0 otherwise. */
static inline int rks_hmac_sha256(const unsigned char *key, size_t key_length, const unsigned char *data,
                                  size_t data_length, unsigned char *out) {
    size_t written = 0;
    unsigned char *result = EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key, key_length, data, data_length, out,
                                      32, &written);
    return result != NULL && written == 32;
}

/* SHA-256 of `data` into `out` (32 bytes), through OpenSSL 3's one-shot digest (EVP_Q_digest): a
 * shim for the same reasons as rks_hmac_sha256. Returns 1 when 32 bytes were written. */
static inline int rks_sha256(const unsigned char *data, size_t data_length, unsigned char *out) {
    size_t written = 0;
    return EVP_Q_digest(NULL, "SHA256", NULL, data, data_length, out, &written) == 1 && written == 32;
}

/* `count` bytes from OpenSSL's CSPRNG into `out`: a shim because RAND_bytes takes an int.
 * Returns 1 on success. */
static inline int rks_random_bytes(unsigned char *out, size_t count) {
    return count <= 0x7fffffff && RAND_bytes(out, (int)count) == 1;
}

#endif
