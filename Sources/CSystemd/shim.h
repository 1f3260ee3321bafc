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

// org.freedesktop.Notifications.Notify(app, 0, icon, summary, body, [], {"urgency": y}, -1) on
// `bus`, waiting up to `timeout_usec` for the answer (sd_bus_message_append is variadic).
static inline int CSystemd_notify_desktop(sd_bus *bus, const char *app, const char *icon, const char *summary,
                                          const char *body, unsigned char urgency, uint64_t timeout_usec) {
    sd_bus_message *call = NULL, *reply = NULL;
    sd_bus_error error = SD_BUS_ERROR_NULL;
    int r = sd_bus_message_new_method_call(bus, &call, "org.freedesktop.Notifications",
                                           "/org/freedesktop/Notifications", "org.freedesktop.Notifications",
                                           "Notify");
    if (r >= 0) r = sd_bus_message_append(call, "susss", app, 0u, icon, summary, body);
    if (r >= 0) r = sd_bus_message_append(call, "as", 0);
    if (r >= 0) r = sd_bus_message_append(call, "a{sv}", 1, "urgency", "y", urgency);
    if (r >= 0) r = sd_bus_message_append(call, "i", (int32_t)-1);
    if (r >= 0) r = sd_bus_call(bus, call, timeout_usec, &error, &reply);
    sd_bus_error_free(&error);
    sd_bus_message_unref(reply);
    sd_bus_message_unref(call);
    return r;
}

#endif
