#ifndef CIMAGEPREP_H
#define CIMAGEPREP_H

#include <stddef.h>

/// uploadd-image's work, in C because libvips's API is variadic (Swift cannot call it).

typedef enum { UPLOADD_FORMAT_JPEG = 0, UPLOADD_FORMAT_WEBP = 1, UPLOADD_FORMAT_KEEP = 2 } UploaddImageFormat;
typedef enum { UPLOADD_METADATA_KEEP = 0, UPLOADD_METADATA_STRIP_GPS = 1, UPLOADD_METADATA_STRIP = 2 } UploaddImageMetadata;

typedef struct {
    int max_side;             /* 0: no cap */
    int quality;              /* 1...100 */
    UploaddImageFormat format;
    long long max_bytes;      /* 0: no goal */
    UploaddImageMetadata metadata;
    long long max_pixels;     /* larger declared images are refused before decoding */
    int allow_untrusted;      /* libvips loaders marked untrusted (fuzzed less) */
} UploaddImageOptions;

typedef struct {
    int is_image;             /* 0: not an image this build decodes; nothing was written */
    int original_width, original_height;
    int width, height;
    int quality;              /* the quality finally used (max_bytes lowers it) */
    char loader[64];          /* libvips's loader, e.g. "jpegload_source" */
    char format[16];          /* what was written: "jpeg", "webp", "png", ... */
    char extension[8];        /* its file name extension, without the dot */
    char mime[32];
    long long size;           /* bytes written */
} UploaddImageResult;

/// Starts libvips (once): no operation cache, `threads` worker threads, untrusted loaders blocked
/// unless allowed. Returns 0, or -1 with a message in `error`.
int uploadd_image_start(const char *argv0, int threads, int allow_untrusted, char *error, size_t error_size);

/// Reads the image on `in_fd`, writes the prepared image to `out_fd`. Returns 0 (see
/// `result->is_image`), -1 with a message in `error` (a corrupt or refused image; when the
/// size goal cannot be met), or -2 when the prepared image could not be written (a full disk:
/// a problem of the machine's, not of the image).
int uploadd_image_prepare(int in_fd, int out_fd, const UploaddImageOptions *options, UploaddImageResult *result,
                          char *error, size_t error_size);

/// From here on the process cannot open sockets (seccomp: socket() and io_uring_setup() fail with
/// EACCES), run programs, nor gain privileges. Returns 0, or -1 with errno.
int uploadd_image_forbid_network(void);
/* From here on (Landlock): files are created, written, truncated, renamed or removed only beneath
   `writable` (libvips's temporary files); what was open stays usable (stdout, the prepared image),
   and reading is not restricted. Where the kernel has scoping (ABI 6), no signal reaches a process
   outside this one: not uploadd. Returns the Landlock ABI applied, 0 when the kernel has none
   (nothing applied), or -1 with errno set. */
int uploadd_image_confine(const char *writable);

#endif
