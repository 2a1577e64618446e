/**
 * @file surface.h
 * @brief Surfaces: strided, multi-plane image memory shared without copies by
 *        pipeline stages, the CPU, a GPU backend and other processes (the
 *        IOSurface idea).
 *
 * A surface has a width, a height, a pixel format and one to four planes, each
 * with its own bytes-per-row, element size (2x2 pixels per element for the
 * chroma of NV12 / I420) and offset. tmem_surface_size_and_align() computes
 * all of that before anything is created.
 *
 * @par Backing
 *  - default: a sealed memfd charged to the `/memory/images` type (the type of
 *    TMEM_ROLE_IMAGE), shareable with other processes by file descriptor;
 *  - or a region of any heap (tmem_surface_desc::heap), e.g. a transient heap,
 *    when the surface never leaves the process.
 *
 * @par Lock, seed, use count, references
 *  - tmem_surface_lock() / tmem_surface_unlock() bracket CPU access, in
 *    read-only or read-write mode. They are not a mutex (IOSurface's lock is
 *    not either): they keep the per-handle lock count and the seed.
 *  - The seed increases on every read-write unlock, so a consumer that
 *    remembers it can tell whether the pixels changed.
 *  - The use count says "a stage or device is still using it" (a producer's
 *    pool skips surfaces in use); it is distinct from the reference count that
 *    keeps the handle alive.
 *  - Seed and use count live in a shared control page, updated with C11
 *    atomics, so every process that holds the surface sees the same values.
 *
 * @par Sharing across processes
 * A memfd surface travels as two file descriptors (the control page and the
 * pixels) plus a small versioned descriptor (tmem_surface_share), over any
 * channel, or directly over a Unix socket with SCM_RIGHTS
 * (tmem_surface_send() / tmem_surface_receive()). Both memfds are sealed
 * against shrinking, growing and further sealing before they leave, so a peer
 * cannot make the other side's mapping fault (SIGBUS). The importer checks the
 * descriptor against fstat (sizes, distinct files), the seals and the control
 * page's magic and identity before it maps anything.
 *
 * Read-only shares: the pixel memfd gets F_SEAL_FUTURE_WRITE, so no process
 * can map it writable any more (the creator's existing mapping stays
 * writable) and the importer maps it PROT_READ. The control page stays
 * read-write for every holder: a read-only consumer must still be able to
 * mark the surface in use, which is what the producer's pool needs to know.
 * The price: a hostile holder can bump the seed or claim uses; it can never
 * change the pixels of a read-only share or the size of anything. Sealing for
 * future writes is irreversible: after a read-only export, read-write exports
 * fail with TMEM_E_PERMISSION.
 *
 * Use counts are kept per process in slots of the control page (pid, count).
 * A slot whose process died is ignored and recycled, so a peer killed while
 * using the surface does not pin it forever. Processes must share a pid
 * namespace for that (the usual case on one device). The memory itself is
 * freed by the kernel when the last holder unmaps and closes it.
 *
 * @par Threads
 * A surface handle may be used from several threads: lock/unlock, seed, use
 * count, retain/release and views are thread-safe. Creating or destroying a
 * heap-backed surface touches the heap, which follows the heap's own rules.
 *
 * @par Quick start
 * @code
 *   tmem_surface_desc d = {0};
 *   d.width = 1920; d.height = 1080; d.format = TMEM_FORMAT_NV12;
 *   tmem_surface *s;
 *   if (tmem_surface_create(ctx, &d, &s) != TMEM_OK) return;
 *   uint32_t seed;
 *   TMEM_IGNORE(tmem_surface_lock(s, 0, &seed));           // read-write
 *   uint8_t *y = tmem_surface_plane_ptr(s, 0);      // fill the frame
 *   TMEM_IGNORE(tmem_surface_unlock(s, 0, &seed));          // seed + 1
 *   TMEM_IGNORE(tmem_surface_send(s, sock, TMEM_SHARE_READ_ONLY));
 *   tmem_surface_release(s);
 * @endcode
 */
#ifndef TYPEDMEM_SURFACE_H
#define TYPEDMEM_SURFACE_H

#include "context.h"
#include "heap.h"

TMEM_EXTERN_C_BEGIN

typedef struct tmem_surface tmem_surface;

/** Most planes a surface has. */
#define TMEM_SURFACE_MAX_PLANES 4
/** Largest width or height accepted. */
#define TMEM_SURFACE_MAX_DIM 32768u
/** Default row alignment in bytes. */
#define TMEM_SURFACE_DEFAULT_ROW_ALIGN 64u
/** Largest row alignment accepted. */
#define TMEM_SURFACE_MAX_ROW_ALIGN 4096u

/** @brief Pixel formats. Values are part of the wire format: never renumbered. */
typedef enum tmem_pixel_format {
    TMEM_FORMAT_INVALID = 0,
    TMEM_FORMAT_RGBA8 = 1,      /**< 1 plane, R G B A bytes */
    TMEM_FORMAT_BGRA8 = 2,      /**< 1 plane, B G R A bytes */
    TMEM_FORMAT_RGB8 = 3,       /**< 1 plane, R G B bytes */
    TMEM_FORMAT_GRAY8 = 4,      /**< 1 plane, one byte */
    TMEM_FORMAT_NV12 = 5,       /**< Y plane + interleaved UV plane at 2x2 subsampling */
    TMEM_FORMAT_I420 = 6,       /**< Y, U, V planes, U and V at 2x2 subsampling */
    TMEM_FORMAT_RGBA16F = 7,    /**< 1 plane, 4 IEEE half floats */
    TMEM_FORMAT_TENSOR_F16_CHW = 8, /**< `channels` planes of half floats (C,H,W) */
    TMEM_FORMAT_TENSOR_F32_CHW = 9, /**< `channels` planes of floats (C,H,W) */
    TMEM_FORMAT_COUNT
} tmem_pixel_format;

/** @brief Short name of a format ("nv12"); "invalid" for unknown values.
 *  @par Threads safe */
TMEM_API const char *tmem_pixel_format_name(tmem_pixel_format format);

/** @brief Describes a surface. Zeroed fields take defaults. */
typedef struct tmem_surface_desc {
    uint32_t width;            /**< pixels, 1..TMEM_SURFACE_MAX_DIM */
    uint32_t height;           /**< pixels, 1..TMEM_SURFACE_MAX_DIM */
    tmem_pixel_format format;
    uint32_t channels;         /**< TENSOR_* formats: 1..4, 0 = 3. Other
                                    formats: 0 (their planes are fixed). */
    uint32_t row_alignment;    /**< power of two <= TMEM_SURFACE_MAX_ROW_ALIGN,
                                    0 = 64. Raised to the element's natural
                                    alignment (2 for F16, 4 for F32). Plane
                                    offsets get the same alignment. */
    uint64_t bytes_per_row[TMEM_SURFACE_MAX_PLANES]; /**< 0 = the row's bytes
                                    rounded up to the row alignment; else at
                                    least that and a multiple of the alignment */
    uint32_t flags;            /**< reserved, must be 0 */
    tmem_type *type;           /**< memfd backing: the type charged; NULL = the
                                    type of TMEM_ROLE_IMAGE. Must be a HOST or
                                    HOST_SHARED type of the same context. */
    tmem_heap *heap;           /**< non-NULL: back the pixels by an allocation
                                    of this heap (not shareable across processes).
                                    The heap must outlive the surface: release
                                    it before tmem_heap_destroy (context
                                    destroy gets the order right itself). */
    const char *name;          /**< memfd name / trace name; may be NULL */
} tmem_surface_desc;

/** @brief One plane of a layout. Sizes in bytes, offsets from the surface's base. */
typedef struct tmem_surface_plane {
    uint32_t width;            /**< elements per row */
    uint32_t height;           /**< rows */
    uint32_t element_width;    /**< pixels across covered by one element (2 for NV12 UV) */
    uint32_t element_height;   /**< pixels down covered by one element */
    uint32_t bytes_per_element;
    uint32_t components;       /**< values per element (UV: 2, RGBA: 4) */
    uint64_t bytes_per_row;
    uint64_t offset;
    uint64_t size;             /**< bytes_per_row * height */
} tmem_surface_plane;

/** @brief Everything a surface's memory needs, computed before creation
 *  (Metal's size-and-align habit). */
typedef struct tmem_surface_layout {
    tmem_pixel_format format;
    uint32_t width, height;
    uint32_t channels;         /**< values per pixel after conversion to RGB-like
                                    planes: 4 RGBA, 3 RGB / NV12 / I420, 1 GRAY,
                                    C for tensors */
    uint32_t row_alignment;    /**< effective row alignment */
    uint32_t plane_count;
    tmem_surface_plane planes[TMEM_SURFACE_MAX_PLANES];
    uint64_t alloc_size;       /**< bytes from the base to the end of the last
                                    plane, rounded up to `alignment` */
    uint64_t alignment;        /**< alignment the base address needs */
} tmem_surface_layout;

/** @brief Compute the layout of a surface without creating it.
 *  Ignores desc->type, heap and name.
 *  @param[out] out  zeroed on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, unknown format, width/height 0
 *          or above TMEM_SURFACE_MAX_DIM, channels wrong for the format,
 *          flags set, bytes_per_row smaller than the row or set for a plane
 *          the format lacks) | TMEM_E_ALIGNMENT (row alignment not a power of
 *          two or too large, bytes_per_row not a multiple of it)
 *          | TMEM_E_OVERFLOW (sizes overflow 64 bits)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_surface_size_and_align(const tmem_surface_desc *desc, tmem_surface_layout *out);

/** @brief How a surface's pixels are held. */
typedef enum tmem_surface_backing {
    TMEM_SURFACE_BACKING_MEMFD = 0, /**< created here, sealed memfd */
    TMEM_SURFACE_BACKING_HEAP,      /**< an allocation of a heap */
    TMEM_SURFACE_BACKING_IMPORTED,  /**< received from another holder */
} tmem_surface_backing;

/** @brief Read-back of a surface. */
typedef struct tmem_surface_info {
    uint64_t id;               /**< registry id in its context (never 0) */
    tmem_surface_layout layout;
    tmem_surface_backing backing;
    bool read_only;            /**< writes through this handle are refused */
    bool shared_read_only;     /**< the pixels are sealed for future writes */
    uint32_t seed;
    uint32_t use_count;        /**< uses by every live process */
    uint32_t ref_count;        /**< references to this handle */
    uint32_t lock_count;       /**< locks held on this handle (both modes) */
    uint64_t mapped_bytes;     /**< control page + pixels as mapped here */
} tmem_surface_info;

/** @brief Create a surface (memfd backing by default, or a heap region).
 *  The pixels start zeroed for memfd backing (and for heap backing, which
 *  asks the heap for zeroed memory). The surface gets an id in ctx's registry
 *  and one reference.
 *  @param[out] out  NULL on failure.
 *  @return the errors of tmem_surface_size_and_align | TMEM_E_INVALID_ARG
 *          (ctx or out NULL, type of another context or not HOST/HOST_SHARED,
 *          heap of another context or of a device type) | TMEM_E_NOT_FOUND (no IMAGE type)
 *          | TMEM_E_BUDGET | TMEM_E_NO_MEMORY | TMEM_E_FULL (heap) |
 *          TMEM_E_UNSUPPORTED (no memfd on this OS) | TMEM_E_OS
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_surface_create(tmem_context *ctx,
                                                        const tmem_surface_desc *desc,
                                                        tmem_surface **out);

/** @brief Take a reference. @return s (NULL stays NULL).
 *  @par Threads safe */
TMEM_API tmem_surface *tmem_surface_retain(tmem_surface *s);

/** @brief Drop a reference; the last one unmaps, closes, uncharges and removes
 *  the surface from the registry (the memory lives on while other processes
 *  hold it). NULL is a no-op. Locks and uses still held by this handle are
 *  dropped with it. tmem_context_destroy frees the surfaces still alive,
 *  whatever their reference counts; release nothing after that.
 *  @par Threads safe */
TMEM_API void tmem_surface_release(tmem_surface *s);

/** @brief Describe a surface. @return TMEM_OK | TMEM_E_INVALID_ARG
 *  @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_surface_get_info(tmem_surface *s, tmem_surface_info *out);

/** @brief The surface's id in its context's registry (0 for NULL).
 *  @par Threads safe */
TMEM_API uint64_t tmem_surface_id(const tmem_surface *s);

/** @brief Find a surface by id and take a reference (IOSurfaceLookup).
 *  @param[out] out  NULL on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_surface_lookup(tmem_context *ctx, uint64_t id, tmem_surface **out);

/** @brief Base address of the pixels (plane offsets are from here). Valid for
 *  the life of the handle; access pixels only between lock and unlock. A
 *  read-only handle's memory is mapped PROT_READ: writing faults.
 *  @par Threads safe */
TMEM_API void *tmem_surface_base(const tmem_surface *s);

/** @brief Address of a plane; NULL for NULL s or a plane the format lacks.
 *  @par Threads safe */
TMEM_API void *tmem_surface_plane_ptr(const tmem_surface *s, uint32_t plane);

/** @brief Lock flags. */
typedef enum tmem_lock_flag {
    TMEM_LOCK_READ_ONLY = 1u << 0, /**< no writes: the unlock keeps the seed */
} tmem_lock_flag;

/** @brief Begin CPU access. Locks nest; each needs an unlock with the same
 *  flags.
 *  @param[out] seed  may be NULL; the seed now.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, unknown flags)
 *          | TMEM_E_PERMISSION (read-write on a read-only handle)
 *          | TMEM_E_OVERFLOW (2^31 nested locks)
 *  @par Threads safe
 *  On failure *seed is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_surface_lock(tmem_surface *s, uint32_t flags, uint32_t *seed);

/** @brief End CPU access. A read-write unlock increases the seed (in every
 *  process holding the surface).
 *  @param[out] seed  may be NULL; the seed after this unlock.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_STATE (no lock of this mode held)
 *  @par Threads safe
 *  On failure *seed is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_surface_unlock(tmem_surface *s, uint32_t flags, uint32_t *seed);

/** @brief The current seed (0 for NULL). Cheap: one atomic load.
 *  @par Threads safe */
TMEM_API uint32_t tmem_surface_seed(const tmem_surface *s);

/** @brief Mark the surface in use by this process (a stage or a device).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_OVERFLOW
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_surface_use_begin(tmem_surface *s);

/** @brief End one use begun by this handle.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_STATE (no use held)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_surface_use_end(tmem_surface *s);

/** @brief Uses held by every live process that holds the surface; slots of
 *  dead processes are not counted (and are recycled).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG
 *  @par Threads safe
 *  On failure *out is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_surface_use_count(tmem_surface *s, uint32_t *out);

/** @brief tmem_surface_use_count() > 0 (false for NULL).
 *  @par Threads safe */
TMEM_API bool tmem_surface_in_use(tmem_surface *s);

/* ---- sharing across processes ---- */

/** Bytes of the wire descriptor (version 1). */
#define TMEM_SURFACE_DESCRIPTOR_SIZE 128u
/** Version of the wire descriptor this library writes and reads. */
#define TMEM_SURFACE_DESCRIPTOR_VERSION 1u

/** @brief Share flags. */
typedef enum tmem_share_flag {
    TMEM_SHARE_READ_ONLY = 1u << 0, /**< export: seal the pixels for future
                                         writes; import: map the pixels read-only */
} tmem_share_flag;

/** @brief What travels to another process: two fds and the descriptor.
 *  fds[0] is the control page, fds[1] the pixels. */
typedef struct tmem_surface_share {
    int fds[2];
    uint32_t descriptor_size;
    uint8_t descriptor[TMEM_SURFACE_DESCRIPTOR_SIZE];
} tmem_surface_share;

/** @brief Export a memfd or imported surface: new close-on-exec fds owned by
 *  the caller (close them with tmem_surface_share_close once sent). The
 *  first share of a surface seals it for good (see "Sharing" above).
 *  @param[out] out  fds -1 on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_STATE (heap-backed surface)
 *          | TMEM_E_PERMISSION (read-write export of a read-only handle or of
 *          pixels already sealed read-only; read-only export of pixels already
 *          shared read-write) | TMEM_E_UNSUPPORTED (read-only export on a
 *          kernel without F_SEAL_FUTURE_WRITE, before Linux 5.1)
 *          | TMEM_E_OS | TMEM_E_NO_MEMORY
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_surface_export(tmem_surface *s, uint32_t flags, tmem_surface_share *out);

/** @brief Close a share's fds (those >= 0) and set them to -1. NULL is a no-op.
 *  @par Threads safe */
TMEM_API void tmem_surface_share_close(tmem_surface_share *share);

/** @brief Import a share. The share's fds stay the caller's (the surface keeps
 *  its own duplicates). The descriptor is checked against fstat of both fds,
 *  their seals and the control page before anything is mapped. Pixels are
 *  mapped read-only when the share is read-only, when they are write-sealed
 *  or when flags ask for it.
 *
 *  Importing a surface this context already imported (same identity, same
 *  files, same layout, same access) returns that handle with one more
 *  reference instead of mapping it again (IOSurface's lookup semantics), so
 *  a frame pool sent over and over costs one mapping per frame buffer.
 *  @param flags  TMEM_SHARE_READ_ONLY maps the pixels read-only even when the
 *                share allows writes.
 *  @param[out] out  NULL on failure; nothing leaks.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, bad fds, unknown flags)
 *          | TMEM_E_PARSE (descriptor too short, bad magic or version)
 *          | TMEM_E_CORRUPT (layout fields inconsistent, sizes that do not match
 *          the files, one file passed twice, control page of another surface,
 *          a control page or pixel file this context already imported paired
 *          with a different other file: a forged frame)
 *          | TMEM_E_PERMISSION (seals missing: a peer could shrink or grow it)
 *          | TMEM_E_NOT_FOUND (no IMAGE type) | TMEM_E_BUDGET | TMEM_E_NO_MEMORY
 *          | TMEM_E_FULL (no free use slot in the control page) | TMEM_E_OS
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_surface_import(tmem_context *ctx,
                                                        const tmem_surface_share *share,
                                                        uint32_t flags, tmem_surface **out);

/** @brief Export and send over a connected Unix socket (one message, the
 *  descriptor as payload, both fds with SCM_RIGHTS). Blocks as the socket does.
 *  @return the errors of tmem_surface_export | TMEM_E_IO (send failed or short)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_surface_send(tmem_surface *s, int socket_fd, uint32_t flags);

/** @brief Receive one message sent by tmem_surface_send() and import it.
 *  Every fd that arrives is closed or owned by the new surface, whatever
 *  happens.
 *  @return the errors of tmem_surface_import | TMEM_E_IO (recv failed, peer
 *          closed: nothing received) | TMEM_E_PARSE (truncated message,
 *          fds missing or too many)
 *  @par Threads safe
 *  On failure *out is NULL. */
TMEM_API TMEM_NODISCARD tmem_status tmem_surface_receive(tmem_context *ctx, int socket_fd,
                                                         uint32_t flags, tmem_surface **out);

/* ---- tensor views ---- */

/** @brief Element types of views and conversion targets. */
typedef enum tmem_dtype {
    TMEM_DTYPE_U8 = 0,
    TMEM_DTYPE_F16,
    TMEM_DTYPE_F32,
    TMEM_DTYPE_COUNT
} tmem_dtype;

/** @brief Bytes of one value of a dtype (0 for unknown).
 *  @par Threads safe */
TMEM_API uint32_t tmem_dtype_size(tmem_dtype dtype);

/** Highest rank of a view. */
#define TMEM_TENSOR_MAX_RANK 4

/** @brief A strided tensor over memory owned elsewhere (no copy). Strides are
 *  in bytes. */
typedef struct tmem_tensor_view {
    void *data;
    tmem_dtype dtype;
    uint32_t rank;
    uint64_t shape[TMEM_TENSOR_MAX_RANK];
    int64_t strides[TMEM_TENSOR_MAX_RANK];
} tmem_tensor_view;

/** @brief A rectangle in pixels. A zeroed rect means the whole surface. */
typedef struct tmem_rect {
    uint32_t x, y, width, height;
} tmem_rect;

/** @brief View one plane (or a sub-rectangle of it) as an (H, W, C) tensor:
 *  shape {rows, elements, components}, strides {bytes_per_row,
 *  bytes_per_element, value size}. For subsampled planes the rect is in
 *  pixels and must start on an element boundary and end on one or at the
 *  surface's edge.
 *  @param rect  NULL or zeroed = the whole plane.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, plane out of range, rect outside
 *          the surface or off the element grid)
 *  @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_surface_plane_view(tmem_surface *s, uint32_t plane,
                                                            const tmem_rect *rect,
                                                            tmem_tensor_view *out);

/** @brief View a TENSOR_* surface (or a sub-rectangle) as a (C, H, W) tensor
 *  spanning its planes (planes are equally spaced, so one stride covers C).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (not a tensor format, rect outside)
 *  @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_surface_tensor_view(tmem_surface *s, const tmem_rect *rect, tmem_tensor_view *out);

/** @brief Describe packed (C, H, W) memory at `data` (strides W*size, ...).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, zero dim, bad dtype)
 *          | TMEM_E_OVERFLOW
 *  @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_tensor_view_chw(void *data, tmem_dtype dtype, uint64_t c,
                                                         uint64_t h, uint64_t w,
                                                         tmem_tensor_view *out);

/* ---- fused conversion ---- */

/** @brief YUV to RGB matrices for NV12 / I420 sources. */
typedef enum tmem_yuv_matrix {
    TMEM_YUV_BT601_LIMITED = 0, /**< default: video range 16..235 */
    TMEM_YUV_BT601_FULL,
    TMEM_YUV_BT709_LIMITED,
    TMEM_YUV_BT709_FULL,
    TMEM_YUV_COUNT
} tmem_yuv_matrix;

/** @brief Resampling filter. */
typedef enum tmem_resize_filter {
    TMEM_RESIZE_BILINEAR = 0,   /**< half-pixel centres, no antialias (PyTorch
                                     interpolate(align_corners=False), OpenCV
                                     INTER_LINEAR) */
    TMEM_RESIZE_NEAREST,
    TMEM_RESIZE_COUNT
} tmem_resize_filter;

/** @brief Conversion flags. */
typedef enum tmem_convert_flag {
    TMEM_CONVERT_BGR = 1u << 0, /**< write channels in B, G, R order */
    TMEM_CONVERT_REFERENCE = 1u << 1, /**< run the portable scalar path even
                                           where a SIMD path exists (the
                                           reference the SIMD path is tested
                                           against: results are bit-identical) */
} tmem_convert_flag;

/** @brief One fused conversion: crop, resize, colour convert, scale, mean/std,
 *  HWC -> CHW. Zeroed = whole surface, bilinear, BT.601 limited, scale 1/255,
 *  mean 0, std 1. Output value = ((v * scale) - mean[c]) / std[c] with v the
 *  resampled 0..255 value (after YUV -> RGB for video formats), evaluated as
 *  (v - mean/scale) / (std/scale) with both constants computed in double
 *  (the default scale exactly 1/255): one rounding when they are exact in
 *  f32 (mean = std = 0.5: (v - 127.5) / 127.5), which is bit for bit what
 *  Hugging Face's image processors produce. */
typedef struct tmem_convert_desc {
    tmem_rect src_rect;
    tmem_resize_filter filter;
    tmem_yuv_matrix matrix;
    float scale;                /**< 0 = 1/255 */
    float mean[4];
    float std[4];               /**< 0 entries = 1 */
    uint32_t flags;             /**< tmem_convert_flag bits */
} tmem_convert_desc;

/** @brief Convert a surface (NV12, I420, BGRA8, RGBA8, RGB8, GRAY8) straight
 *  into a planar float tensor in one pass: dst is rank 3 (C, H, W), dtype F32
 *  or F16, any strides; C is 3 (or 1 for GRAY8 sources, or 4 for RGBA8/BGRA8
 *  sources to keep alpha). Takes and drops a read-only lock on src (the seed
 *  is unchanged). The destination may be any memory, e.g. an allocation of an
 *  activations heap.
 *  @param desc  NULL = defaults.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, unsupported source format,
 *          dst not rank 3 / wrong C / dtype, zero-sized, rect outside, bad
 *          filter or matrix, std or scale not finite, flags)
 *          | TMEM_E_NO_MEMORY (tables for very wide outputs)
 *  @par Threads safe (several conversions of one source may run at once) */
TMEM_API TMEM_NODISCARD tmem_status tmem_surface_convert(tmem_surface *src,
                                                         const tmem_convert_desc *desc,
                                                         const tmem_tensor_view *dst);

/** @brief Vision-transformer patch layout of a conversion's destination: the
 *  flattened `pixel_values` of Qwen2-VL / Qwen2.5-VL / Qwen3-VL / Qwen3.5.
 *  The resized image (width x height) is cut into patch x patch squares;
 *  a row of the destination is one patch, its values ordered (channel,
 *  frame, py, px); rows are ordered by merge block (merge x merge patches,
 *  row-major over the image), then row-major inside the block. The one image
 *  is repeated `temporal` times (a still image as a clip of identical
 *  frames). Zeroed fields take defaults. */
typedef struct tmem_patch_desc {
    uint32_t width, height; /**< resized size in pixels; multiples of patch*merge */
    uint32_t patch;         /**< patch side in pixels, 0 = 16 */
    uint32_t merge;         /**< spatial merge, 0 = 2 */
    uint32_t temporal;      /**< frames per temporal patch, 0 = 2 */
    uint32_t flags;         /**< tmem_patch_flag bits */
} tmem_patch_desc;

/** @brief Patch layout flags. */
typedef enum tmem_patch_flag {
    /** Values of a row ordered (frame, channel, py, px) instead of Hugging
     *  Face's (channel, frame, py, px): each frame's C*patch*patch values are
     *  contiguous, which is what a Conv3d split into one Conv2d per frame
     *  (llama.cpp's v.patch_embd.weight and .weight.1) multiplies. */
    TMEM_PATCH_FRAME_MAJOR = 1u << 0,
} tmem_patch_flag;

/** @brief The same fused conversion as tmem_surface_convert() (crop, resize
 *  to patch->width x patch->height, colour, scale, mean/std) written straight
 *  in patch order: dst is rank 2, shape {(h/patch)*(w/patch),
 *  C*temporal*patch*patch}, F32 or F16, values of a row contiguous
 *  (strides[1] = value size), rows at any stride >= a row. C is 3 (GRAY8
 *  sources are replicated into R, G and B). Element (c, t, y, x) of the image lands at row
 *  ((bh*(w/(patch*merge)) + bw)*merge + mh)*merge + mw and column
 *  ((c*temporal + t)*patch + py)*patch + px (with TMEM_PATCH_FRAME_MAJOR:
 *  ((t*C + c)*patch + py)*patch + px), where y = (bh*merge + mh)*patch + py
 *  and x likewise.
 *  @return the errors of tmem_surface_convert | TMEM_E_INVALID_ARG (patch NULL,
 *          sizes not multiples of patch*merge, dst shape or strides wrong,
 *          unknown flags)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_surface_convert_patches(tmem_surface *src, const tmem_convert_desc *desc,
                                                                 const tmem_patch_desc *patch,
                                                                 const tmem_tensor_view *dst);

/** @brief The instruction set the conversions use on this CPU by default:
 *  "avx2" (x86-64 with AVX2, FMA and F16C) or "scalar".
 *  @par Threads safe */
TMEM_API const char *tmem_surface_convert_isa(void);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_SURFACE_H */
