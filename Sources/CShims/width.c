#define _GNU_SOURCE
#include "CShims.h"

#include <locale.h>
#include <wchar.h>

int CShims_display_width(uint32_t scalar) {
    /* wcwidth answers by the calling thread's LC_CTYPE: ask it in C.UTF-8, whatever the program's
       locale is, without changing the program's own. */
    static locale_t utf8;
    if (utf8 == (locale_t)0) utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    if (utf8 == (locale_t)0) return scalar < 0x20 || scalar == 0x7f ? -1 : 1;
    locale_t previous = uselocale(utf8);
    int width = wcwidth((wchar_t)scalar);
    uselocale(previous);
    return width;
}
