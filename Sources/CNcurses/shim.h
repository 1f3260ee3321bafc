#ifndef CNCURSES_SHIM_H
#define CNCURSES_SHIM_H

#define NCURSES_WIDECHAR 1
#include <ncursesw/curses.h>
#include <ncursesw/term.h>

// What ncurses offers as macros or globals, which Swift cannot use directly.
static inline int CNcurses_lines(void) { return LINES; }
static inline int CNcurses_columns(void) { return COLS; }
static inline WINDOW *CNcurses_screen(void) { return stdscr; }
static inline int CNcurses_reverse(int on) { return on ? attron(A_REVERSE) : attroff(A_REVERSE); }
static inline int CNcurses_bold(int on) { return on ? attron(A_BOLD) : attroff(A_BOLD); }
static inline int CNcurses_key_resize(void) { return KEY_RESIZE; }

#endif
