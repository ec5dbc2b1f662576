/* sha256.h — SHA-256 of a buffer. */
#ifndef CORRAL_SHA256_H
#define CORRAL_SHA256_H
#include <stddef.h>
void sha256(const void *data, size_t len, unsigned char out[32]);
void sha256_hex(const void *data, size_t len, char out[65]); /* lowercase, NUL-terminated */
#endif
