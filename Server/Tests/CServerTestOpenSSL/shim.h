// libcrypto for the server's tests: they sign JWS under the project's test PKI.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
