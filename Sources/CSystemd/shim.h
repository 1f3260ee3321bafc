#ifndef CSYSTEMD_SHIM_H
#define CSYSTEMD_SHIM_H

#include <systemd/sd-daemon.h>
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-journal.h>
#include <systemd/sd-bus.h>

// sd_journal_send is variadic; this sends up to 8 prepared "KEY=value" fields through sd_journal_sendv.
static inline int CSystemd_journal_send_fields(const char *const *fields, int count) {
    struct iovec iov[16];
    if (count > 16) count = 16;
    for (int i = 0; i < count; i++) {
        iov[i].iov_base = (void *)fields[i];
        iov[i].iov_len = __builtin_strlen(fields[i]);
    }
    return sd_journal_sendv(iov, count);
}

// SD_BUS_ERROR_NULL as a function: the macro is an initializer Swift cannot import.
static inline sd_bus_error CSystemd_bus_error_null(void) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    return error;
}

#endif
