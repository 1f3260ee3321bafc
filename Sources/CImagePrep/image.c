#define _GNU_SOURCE
#include "CImagePrep.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <seccomp.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <vips/vips.h>

/* `what`, then libvips's own explanation (its last line), into `error`; clears libvips's buffer. */
static int fail(char *error, size_t error_size, const char *what) {
    char detail[512];
    snprintf(detail, sizeof detail, "%s", vips_error_buffer());
    vips_error_clear();
    size_t length = strlen(detail);
    while (length > 0 && (detail[length - 1] == '\n' || detail[length - 1] == ' ')) detail[--length] = 0;
    char *last = strrchr(detail, '\n');
    const char *shown = last ? last + 1 : detail;
    snprintf(error, error_size, "%s%s%s", what, *shown ? ": " : "", shown);
    return -1;
}

int uploadd_image_start(const char *argv0, int threads, int allow_untrusted, char *error, size_t error_size) {
    if (VIPS_INIT(argv0)) return fail(error, error_size, "cannot start libvips");
    vips_cache_set_max(0);
    if (threads > 0) vips_concurrency_set(threads);
    vips_block_untrusted_set(allow_untrusted ? FALSE : TRUE);
    return 0;
}

int uploadd_image_forbid_network(void) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    scmp_filter_ctx context = seccomp_init(SCMP_ACT_ALLOW);
    if (!context) {
        errno = ENOMEM;
        return -1;
    }
    /* No socket of any family (not even AF_UNIX: uploadd's own control socket is one), no
       io_uring (which can open sockets without socket()), no programs. */
    int rc = seccomp_rule_add(context, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 0);
    if (rc == 0) rc = seccomp_rule_add(context, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(io_uring_setup), 0);
    if (rc == 0) rc = seccomp_rule_add(context, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(execve), 0);
    if (rc == 0) rc = seccomp_rule_add(context, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(execveat), 0);
    if (rc == 0) rc = seccomp_load(context);
    seccomp_release(context);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    return 0;
}

/* Landlock's ABI, declared here: Debian 12's headers stop at ABI 2, and the kernel's structures
   only grow (a shorter size tells it what an older caller knows). */
#define UPLOADD_LANDLOCK_TRUNCATE (1ULL << 14)        /* ABI 3 */
#define UPLOADD_LANDLOCK_SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define UPLOADD_LANDLOCK_SCOPE_SIGNAL (1ULL << 1)     /* ABI 6 */
struct uploadd_landlock_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; /* ABI 4 */
    uint64_t scoped;             /* ABI 6 */
};

int uploadd_image_confine(const char *writable) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 1) return 0; /* no Landlock in this kernel, or it is turned off */
    uint64_t writes = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                      LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                      LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                      LANDLOCK_ACCESS_FS_MAKE_SYM;
    if (abi >= 2) writes |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) writes |= UPLOADD_LANDLOCK_TRUNCATE;
    struct uploadd_landlock_ruleset_attr attributes = {.handled_access_fs = writes};
    size_t size = sizeof attributes.handled_access_fs;
    if (abi >= 6) {
        /* No signal to a process outside this one (uploadd, the user's others), no abstract socket. */
        attributes.scoped = UPLOADD_LANDLOCK_SCOPE_SIGNAL | UPLOADD_LANDLOCK_SCOPE_ABSTRACT_UNIX;
        size = sizeof attributes;
    }
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attributes, size, 0);
    if (ruleset < 0) return -1;
    int folder = open(writable, O_PATH | O_DIRECTORY | O_CLOEXEC);
    int rc = -1;
    if (folder >= 0) {
        struct landlock_path_beneath_attr beneath = {.allowed_access = writes, .parent_fd = folder};
        rc = (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0);
        close(folder);
    }
    if (rc == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) rc = -1;
    if (rc == 0) rc = (int)syscall(SYS_landlock_restrict_self, ruleset, 0);
    int saved = errno;
    close(ruleset);
    errno = saved;
    return rc == 0 ? (int)abi : -1;
}

typedef struct {
    const char *format, *extension, *mime;
} Kind;

static const Kind JPEG = {"jpeg", "jpg", "image/jpeg"};
static const Kind WEBP = {"webp", "webp", "image/webp"};
static const Kind PNG = {"png", "png", "image/png"};
static const Kind GIF = {"gif", "gif", "image/gif"};
static const Kind HEIF = {"heif", "heic", "image/heic"};
static const Kind TIFF = {"tiff", "tif", "image/tiff"};

/* What `keep` writes for an image read by `loader`: its own format where libvips can write it. */
static Kind kept_kind(const char *loader) {
    if (vips_isprefix("jpegload", loader)) return JPEG;
    if (vips_isprefix("webpload", loader)) return WEBP;
    if (vips_isprefix("pngload", loader)) return PNG;
    if (vips_isprefix("gifload", loader)) return GIF;
    if (vips_isprefix("heifload", loader)) return HEIF;
    if (vips_isprefix("tiffload", loader)) return TIFF;
    return JPEG;
}

/* The photo formats uploadd prepares. Anything else libvips could read (a matrix of numbers in a
   text file, SVG, PDF, FITS, ...) is not taken for a photo: it goes as it is, unless the SPEC
   says untrusted-loaders (libvips's own untrusted ones stay blocked otherwise). */
static int is_photo_loader(const char *loader) {
    static const char *photos[] = {"jpegload", "pngload", "webpload", "gifload", "tiffload", "heifload"};
    for (size_t i = 0; i < sizeof photos / sizeof photos[0]; i++) {
        if (vips_isprefix(photos[i], loader)) return 1;
    }
    return 0;
}

/* The loader's nickname ("jpegload_source") from the type name libvips gives back. */
static const char *nickname(const char *type_name) {
    GType type = g_type_from_name(type_name);
    const char *name = type ? vips_nickname_find(type) : NULL;
    return name ? name : type_name;
}

/* Encodes `image` as `kind` into `target`. */
static int save(VipsImage *image, VipsTarget *target, Kind kind, int quality, int strip) {
    int rc;
    /* Optimised Huffman tables save a few per cent but make libjpeg hold every coefficient of the
       image: only for images of up to 12 megapixels (36 MB of them at the most). */
    int optimize = (long long)vips_image_get_width(image) * vips_image_get_height(image) <= 12000000;
    if (kind.format == JPEG.format)
        rc = vips_jpegsave_target(image, target, "Q", quality, "strip", strip, "optimize_coding", optimize, NULL);
    else if (kind.format == WEBP.format)
        rc = vips_webpsave_target(image, target, "Q", quality, "strip", strip, NULL);
    else if (kind.format == PNG.format)
        rc = vips_pngsave_target(image, target, "strip", strip, NULL);
    else if (kind.format == GIF.format)
        rc = vips_gifsave_target(image, target, "strip", strip, NULL);
    else if (kind.format == HEIF.format)
        rc = vips_heifsave_target(image, target, "Q", quality, "strip", strip, NULL);
    else
        rc = vips_tiffsave_target(image, target, "Q", quality, "strip", strip, NULL);
    return rc;
}

/* Encodes `image` as `kind` into memory; the bytes stay valid while *blob is referenced. */
static int encode(VipsImage *image, Kind kind, int quality, int strip, VipsBlob **blob) {
    VipsTarget *target = vips_target_new_to_memory();
    if (!target) return -1;
    int rc = save(image, target, kind, quality, strip);
    if (rc == 0) g_object_get(target, "blob", blob, NULL);
    g_object_unref(target);
    return rc == 0 && *blob ? 0 : -1;
}

/* Drops the location: the EXIF GPS directory (ifd3) and XMP, which can carry it too. */
static void *remove_location_field(VipsImage *image, const char *name, GValue *value, void *removed) {
    (void)value;
    if (vips_isprefix("exif-ifd3-", name) || strcmp(name, "xmp-data") == 0) {
        char **list = removed;
        for (int i = 0; i < 255; i++) {
            if (!list[i]) {
                list[i] = g_strdup(name);
                break;
            }
        }
    }
    (void)image;
    return NULL;
}

static void strip_location(VipsImage *image) {
    char *removed[256] = {0};
    vips_image_map(image, remove_location_field, removed);
    for (int i = 0; removed[i]; i++) {
        vips_image_remove(image, removed[i]);
        g_free(removed[i]);
    }
}

/* Whether the file system under `fd` has no room left (under 64 KiB for us): a streamed save that
   failed there most likely failed writing, whatever libvips's words for it. */
static int output_is_full(int fd) {
    struct statvfs info;
    if (fstatvfs(fd, &info) != 0) return 0;
    return (unsigned long long)info.f_bavail * info.f_frsize < 64 * 1024;
}

static int write_all(int fd, const void *bytes, size_t length) {
    const char *at = bytes;
    while (length > 0) {
        ssize_t written = write(fd, at, length);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return -1;
        at += written;
        length -= (size_t)written;
    }
    return 0;
}

/* Converts to what JPEG and WebP hold: 8-bit sRGB (or grey), alpha flattened on white for JPEG.
   Takes over *image: on success it is the converted image, on failure it is unreffed and NULL. */
static int normalise(VipsImage **image, Kind kind) {
    VipsImage *in = *image, *out = NULL;
    *image = NULL;
    VipsInterpretation space = vips_image_get_interpretation(in);
    if (space != VIPS_INTERPRETATION_sRGB && space != VIPS_INTERPRETATION_B_W) {
        int rc = vips_colourspace(in, &out, VIPS_INTERPRETATION_sRGB, NULL);
        g_object_unref(in);
        if (rc) return -1;
        in = out;
    }
    if (vips_image_get_format(in) != VIPS_FORMAT_UCHAR) {
        int rc = vips_cast(in, &out, VIPS_FORMAT_UCHAR, NULL);
        g_object_unref(in);
        if (rc) return -1;
        in = out;
    }
    if (kind.format == JPEG.format && vips_image_hasalpha(in)) {
        int colours = vips_image_get_bands(in) - 1;
        VipsArrayDouble *white = colours >= 3 ? vips_array_double_newv(3, 255.0, 255.0, 255.0)
                                              : vips_array_double_newv(1, 255.0);
        int rc = vips_flatten(in, &out, "background", white, NULL);
        vips_area_unref(VIPS_AREA(white));
        g_object_unref(in);
        if (rc) return -1;
        in = out;
    }
    *image = in;
    return 0;
}

int uploadd_image_prepare(int in_fd, int out_fd, const UploaddImageOptions *options, UploaddImageResult *result,
                          char *error, size_t error_size) {
    memset(result, 0, sizeof *result);
    VipsSource *source = vips_source_new_from_descriptor(in_fd);
    if (!source) return fail(error, error_size, "cannot read the file");
    const char *loader = vips_foreign_find_load_source(source);
    if (!loader) {
        /* Not an image this build reads (or one of the loaders kept blocked): sent as it is. */
        vips_error_clear();
        g_object_unref(source);
        return 0;
    }
    loader = nickname(loader);
    if (!options->allow_untrusted && !is_photo_loader(loader)) {
        g_object_unref(source);
        return 0;
    }
    snprintf(result->loader, sizeof result->loader, "%s", loader);
    VipsImage *header = vips_image_new_from_source(source, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    g_object_unref(source);
    if (!header) return fail(error, error_size, "not a readable image");
    result->original_width = vips_image_get_width(header);
    result->original_height = vips_image_get_height(header);
    int upright = vips_image_get_orientation(header) <= 1;
    g_object_unref(header);
    long long pixels = (long long)result->original_width * result->original_height;
    if (pixels > options->max_pixels) {
        snprintf(error, error_size,
                 "the image declares %dx%d pixels, more than the limit of %lld megapixels (max-pixels=)",
                 result->original_width, result->original_height, options->max_pixels / 1000000);
        return -1;
    }
    result->is_image = 1;

    if (lseek(in_fd, 0, SEEK_SET) < 0) return fail(error, error_size, "cannot read the file again");
    source = vips_source_new_from_descriptor(in_fd);
    if (!source) return fail(error, error_size, "cannot read the file");
    VipsImage *image = NULL;
    int rc;
    if (options->max_side > 0) {
        /* Shrink-on-load where the format can (JPEG decodes at 1/2, 1/4, 1/8): memory stays small. */
        /* A truncated file fails rather than arrive with a grey bottom (the loader's own option). */
        rc = vips_thumbnail_source(source, &image, options->max_side, "height", options->max_side, "size",
                                   VIPS_SIZE_DOWN, "option_string", "fail_on=truncated", NULL);
    } else {
        /* Full size: streamed line by line, unless it must be turned (which needs all of it). */
        VipsImage *loaded =
            vips_image_new_from_source(source, "", "access", upright ? VIPS_ACCESS_SEQUENTIAL : VIPS_ACCESS_RANDOM,
                                       "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL);
        rc = loaded ? vips_autorot(loaded, &image, NULL) : -1;
        if (loaded) g_object_unref(loaded);
    }
    g_object_unref(source);
    if (rc) return fail(error, error_size, "cannot decode the image");

    Kind kind = options->format == UPLOADD_FORMAT_WEBP ? WEBP
                : options->format == UPLOADD_FORMAT_KEEP ? kept_kind(loader)
                                                         : JPEG;
    if (kind.format == JPEG.format || kind.format == WEBP.format) {
        if (normalise(&image, kind)) return fail(error, error_size, "cannot convert the image to sRGB");
    }
    if (options->metadata == UPLOADD_METADATA_STRIP_GPS) strip_location(image);
    int strip = options->metadata == UPLOADD_METADATA_STRIP;
    int quality = options->quality;

    VipsBlob *blob = NULL;
    if (options->max_bytes <= 0) {
        /* Streamed from decoder to file: only a few lines of pixels are in memory at once. */
        VipsTarget *target = vips_target_new_to_descriptor(out_fd);
        rc = target ? save(image, target, kind, quality, strip) : -1;
        if (target) g_object_unref(target);
        result->width = vips_image_get_width(image);
        result->height = vips_image_get_height(image);
        result->quality = quality;
        g_object_unref(image);
        /* Decoding happens as the encoder pulls: a damaged file fails here, with the decoder's words.
           So does a full disk under the output, which is the machine's problem, not the image's. */
        if (rc && output_is_full(out_fd)) {
            snprintf(error, error_size, "cannot write the prepared image: %s", strerror(ENOSPC));
            return -2;
        }
        if (rc) return fail(error, error_size, "cannot convert the image");
        off_t end = lseek(out_fd, 0, SEEK_CUR);
        result->size = end > 0 ? (long long)end : 0;
        snprintf(result->format, sizeof result->format, "%s", kind.format);
        snprintf(result->extension, sizeof result->extension, "%s", kind.extension);
        snprintf(result->mime, sizeof result->mime, "%s", kind.mime);
        return 0;
    } else {
        /* A size goal: render once into memory, then encode at lower quality, then smaller, until
           it fits. */
        VipsImage *rendered = vips_image_copy_memory(image);
        g_object_unref(image);
        if (!rendered) return fail(error, error_size, "cannot decode the image");
        image = rendered;
        long long smallest = 0;
        for (int tries = 0; tries < 24; tries++) {
            if (encode(image, kind, quality, strip, &blob)) {
                g_object_unref(image);
                return fail(error, error_size, "cannot encode the image");
            }
            size_t length = 0;
            vips_blob_get(blob, &length);
            if ((long long)length <= options->max_bytes) break;
            smallest = (long long)length;
            vips_area_unref(VIPS_AREA(blob));
            blob = NULL;
            int longest = VIPS_MAX(vips_image_get_width(image), vips_image_get_height(image));
            if (quality > 40 && kind.format != PNG.format && kind.format != GIF.format) {
                quality = VIPS_MAX(quality - 10, 40);
            } else if (longest > 256) {
                VipsImage *smaller = NULL;
                if (vips_resize(image, &smaller, 0.8, NULL)) {
                    g_object_unref(image);
                    return fail(error, error_size, "cannot resize the image");
                }
                g_object_unref(image);
                image = vips_image_copy_memory(smaller);
                g_object_unref(smaller);
                if (!image) return fail(error, error_size, "cannot resize the image");
            } else {
                break;
            }
        }
        if (!blob) {
            snprintf(error, error_size,
                     "cannot make the image fit in %lld bytes (max-bytes=): the smallest try was %lld bytes at "
                     "%dx%d, quality %d",
                     options->max_bytes, smallest, vips_image_get_width(image), vips_image_get_height(image),
                     quality);
            g_object_unref(image);
            return -1;
        }
    }
    result->width = vips_image_get_width(image);
    result->height = vips_image_get_height(image);
    result->quality = quality;
    g_object_unref(image);
    size_t length = 0;
    const void *bytes = vips_blob_get(blob, &length);
    rc = write_all(out_fd, bytes, length);
    vips_area_unref(VIPS_AREA(blob));
    if (rc) {
        snprintf(error, error_size, "cannot write the prepared image: %s", strerror(errno));
        return -2;
    }
    result->size = (long long)length;
    snprintf(result->format, sizeof result->format, "%s", kind.format);
    snprintf(result->extension, sizeof result->extension, "%s", kind.extension);
    snprintf(result->mime, sizeof result->mime, "%s", kind.mime);
    return 0;
}
