#ifndef RECEIPTKIT_JANSSON_SHIM_H
#define RECEIPTKIT_JANSSON_SHIM_H

#include <jansson.h>

/* jansson exposes a value's type and its decode flags only through macros,
 * which Swift cannot import; these inline functions give Swift the same. */

static inline json_type rk_json_typeof(const json_t *value) {
    return json_typeof(value);
}

/* Flags for every decode ReceiptKit makes: reject duplicate object members
 * (signed data must have one meaning). NUL in strings stays rejected because
 * JSON_ALLOW_NUL is not set. */
static inline size_t rk_json_strict_decode_flags(void) {
    return JSON_REJECT_DUPLICATES;
}

/* Flags for reading back an entitlement ledger's JSON: duplicates still
 * rejected, but NUL allowed in strings, since a legacy receipt's UTF8String
 * may hold one and a ledger then writes it as \u0000 (JSONEncoder too). */
static inline size_t rk_json_ledger_decode_flags(void) {
    return JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL;
}

/* Flags for a file a person wrote (LocatedJSON): duplicates and NUL rejected
 * as for signed data, but any value at the root, so that a file that is not
 * an object is told so at its line rather than as a syntax error. */
static inline size_t rk_json_document_decode_flags(void) {
    return JSON_REJECT_DUPLICATES | JSON_DECODE_ANY;
}

#endif
