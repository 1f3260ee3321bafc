#include "CShims.h"

#include <malloc.h>

int CShims_limit_malloc_arenas(int count) {
    return mallopt(M_ARENA_MAX, count) == 1 ? 0 : -1;
}

int CShims_trim_heap(void) {
    return malloc_trim(0);
}

int CShims_set_mmap_threshold(int bytes) {
    return mallopt(M_MMAP_THRESHOLD, bytes) == 1 ? 0 : -1;
}
