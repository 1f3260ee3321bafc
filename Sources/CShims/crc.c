#include "CShims.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

static uint32_t crc32c_table[8][256];
static uint32_t crc32_table[256];
static int tables_ready = 0;
static int have_sse42 = 0;

static void build_tables(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i, d = i;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
            d = (d & 1) ? (d >> 1) ^ 0xEDB88320u : d >> 1;
        }
        crc32c_table[0][i] = c;
        crc32_table[i] = d;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = crc32c_table[0][i];
        for (int t = 1; t < 8; t++) {
            c = crc32c_table[0][c & 0xFF] ^ (c >> 8);
            crc32c_table[t][i] = c;
        }
    }
#if defined(__x86_64__)
    unsigned int eax, ebx, ecx, edx;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) have_sse42 = (ecx & bit_SSE4_2) != 0;
#endif
    __atomic_store_n(&tables_ready, 1, __ATOMIC_RELEASE);
}

static void ensure_tables(void) {
    // Building twice from two threads is harmless: both write the same values.
    if (!__atomic_load_n(&tables_ready, __ATOMIC_ACQUIRE)) build_tables();
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_hardware(uint32_t crc, const unsigned char *p, size_t n) {
    uint64_t c = crc;
    while (n && ((uintptr_t)p & 7)) { c = _mm_crc32_u8((uint32_t)c, *p++); n--; }
    while (n >= 8) { uint64_t v; __builtin_memcpy(&v, p, 8); c = _mm_crc32_u64(c, v); p += 8; n -= 8; }
    while (n) { c = _mm_crc32_u8((uint32_t)c, *p++); n--; }
    return (uint32_t)c;
}
#endif

static uint32_t crc32c_software(uint32_t crc, const unsigned char *p, size_t n) {
    while (n >= 8) {
        uint32_t lo = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        lo ^= crc;
        crc = crc32c_table[7][lo & 0xFF] ^ crc32c_table[6][(lo >> 8) & 0xFF] ^
              crc32c_table[5][(lo >> 16) & 0xFF] ^ crc32c_table[4][lo >> 24] ^
              crc32c_table[3][p[4]] ^ crc32c_table[2][p[5]] ^ crc32c_table[1][p[6]] ^ crc32c_table[0][p[7]];
        p += 8; n -= 8;
    }
    while (n--) crc = crc32c_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

uint32_t CShims_crc32c(uint32_t crc, const void *data, size_t length) {
    ensure_tables();
    const unsigned char *p = data;
    crc = ~crc;
#if defined(__x86_64__)
    if (have_sse42) return ~crc32c_hardware(crc, p, length);
#endif
    return ~crc32c_software(crc, p, length);
}

uint32_t CShims_crc32(uint32_t crc, const void *data, size_t length) {
    ensure_tables();
    const unsigned char *p = data;
    crc = ~crc;
    while (length--) crc = crc32_table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}
