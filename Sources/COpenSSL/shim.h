#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#endif
