/*
 * The porting contract: the only functions in typedmem that call the OS.
 *
 * Every function returns TMEM_OK or a tmem_status and, on failure, leaves its
 * outputs at NULL / -1 / 0 and the address space as it was. Addresses and sizes
 * passed to reserve/commit/decommit/release/advise/lock must be multiples of
 * tmem__os_page_size() unless stated. Linux is the first implementation
 * (os_linux*.c); other POSIX systems compile and return TMEM_E_UNSUPPORTED for
 * what they lack.
 *
 * Fault injection (tests): every call below except the pure queries (page
 * sizes, the clock) first asks tmem__os_fault_hit(call); when armed it fails the chosen
 * call with the chosen errno mapped to a status, without touching the OS.
 */
#ifndef TMEM_OS_H
#define TMEM_OS_H

#include <pthread.h>
#include <stdio.h>
#include "base/base.h"
#include "typedmem/system.h"

/* Every OS entry point, for fault injection and call counting. */
#define TMEM__OS_CALL_LIST(X)                                                  \
    X(RESERVE) X(RELEASE) X(COMMIT) X(DECOMMIT) X(MAP_ANON) X(UNMAP)           \
    X(MEMFD_CREATE) X(MEMFD_SEAL) X(FD_SEALS) X(FD_RESIZE) X(MAP_FD)           \
    X(FILE_OPEN) X(FD_SIZE) X(CLOSE) X(ADVISE) X(LOCK) X(UNLOCK)               \
    X(RESIDENCY) X(FOOTPRINT) X(LIMITS) X(PRESSURE)                          \
    X(SOCKETPAIR) X(SEND_FDS) X(RECV_FDS) X(FD_STAT) X(FD_DUP)               \
    X(FILE_CREATE) X(WRITE) X(READ) X(UNLINK)                                \
    X(STREAM_WRITE) X(THREAD_CREATE) X(LIB_OPEN)

typedef enum tmem__os_call {
#define TMEM__OS_CALL_ENUM_(n) TMEM__OS_##n,
    TMEM__OS_CALL_LIST(TMEM__OS_CALL_ENUM_)
#undef TMEM__OS_CALL_ENUM_
    TMEM__OS_CALL_COUNT,
    TMEM__OS_ANY = TMEM__OS_CALL_COUNT /* arm: count every call */
} tmem__os_call;

/* ---- queries (never fail, never injected) ---- */
size_t tmem__os_page_size(void);
size_t tmem__os_huge_page_size(void); /* 0 when unknown */
/* Monotonic clock in nanoseconds (CLOCK_MONOTONIC): for timestamps and
 * durations, never for wall-clock time. */
uint64_t tmem__os_now_ns(void);
/* Bytes of physical memory (sysconf: pages x page size); 0 when unknown. */
uint64_t tmem__os_physical_bytes(void);
/* An environment variable's value, NULL when unset (os_proc.c). The string
 * belongs to the environment: copy it before anything may change it. */
const char *tmem__os_getenv(const char *name);

/* ---- address space ---- */
enum tmem__os_map_flag {
    TMEM__OS_MAP_POPULATE = 1u << 0, /* fault pages in now (MAP_POPULATE) */
    TMEM__OS_MAP_HUGE = 1u << 1,     /* MAP_HUGETLB, falling back to THP advice */
    TMEM__OS_MAP_LOCKED = 1u << 2,   /* mlock after mapping */
};

/* Reserve size bytes of address space (PROT_NONE, no commit charge) aligned to
 * align (power of two >= page size). */
tmem_status tmem__os_reserve(size_t size, size_t align, void **out);
/* Give a reserved or mapped range back. */
tmem_status tmem__os_release(void *addr, size_t size);
/* Make [addr, addr+size) inside a reservation readable and writable. */
tmem_status tmem__os_commit(void *addr, size_t size, unsigned map_flags);
/* Drop the pages and make the range inaccessible again (stays reserved). */
tmem_status tmem__os_decommit(void *addr, size_t size);
/* Anonymous private read-write mapping. *used_huge tells whether MAP_HUGETLB
 * succeeded (may be NULL). */
tmem_status tmem__os_map_anon(size_t size, unsigned map_flags, void **out, bool *used_huge);
tmem_status tmem__os_unmap(void *addr, size_t size);

/* ---- memfd and files ---- */
enum tmem__os_seal {
    TMEM__OS_SEAL_SEAL = 1u << 0,
    TMEM__OS_SEAL_SHRINK = 1u << 1,
    TMEM__OS_SEAL_GROW = 1u << 2,
    TMEM__OS_SEAL_WRITE = 1u << 3,
    TMEM__OS_SEAL_FUTURE_WRITE = 1u << 4,
};
/* A memfd of size bytes that allows sealing (close-on-exec). */
tmem_status tmem__os_memfd_create(const char *name, uint64_t size, int *out_fd);
tmem_status tmem__os_memfd_seal(int fd, unsigned seals);
tmem_status tmem__os_fd_seals(int fd, unsigned *out_seals);
tmem_status tmem__os_fd_resize(int fd, uint64_t size);
/* Map size bytes of fd at offset (page-aligned). writable=false maps
 * PROT_READ; shared=true maps MAP_SHARED, else MAP_PRIVATE. */
tmem_status tmem__os_map_fd(int fd, uint64_t offset, size_t size, bool writable, bool shared, void **out);
/* Open a regular file read-only (close-on-exec) and report its size. */
tmem_status tmem__os_file_open(const char *path, int *out_fd, uint64_t *out_size);
tmem_status tmem__os_fd_size(int fd, uint64_t *out_size);
tmem_status tmem__os_close(int fd);

/* ---- byte-stream files (os_file.c): trace files, exported reports ---- */
/* Create or truncate path for writing (O_WRONLY|O_CREAT|O_TRUNC, close-on-exec,
 * mode 0666 & ~umask). TMEM_E_NOT_FOUND when a directory on the path is
 * missing; the fd counts as live until tmem__os_close. */
tmem_status tmem__os_file_create(const char *path, int *out_fd);
/* Write all len bytes (retrying short writes and EINTR). A full disk or a
 * file-size limit is TMEM_E_IO. On failure some prefix may have been written. */
tmem_status tmem__os_write_all(int fd, const void *buf, size_t len);
/* One read of at most cap bytes (retrying EINTR); *out_got = 0 at end of file. */
tmem_status tmem__os_read(int fd, void *buf, size_t cap, size_t *out_got);
/* Remove a file name. Counted as a teardown call (it undoes a create), so a
 * TMEM__OS_ANY sweep never fails the clean-up of a partial file. */
tmem_status tmem__os_unlink(const char *path);

/* ---- output files replaced atomically (os_afile.c; docs/reliability.md) ----
 * create: refuse a target that exists and is not a regular file (why: "is a
 * directory", "is a device", ...) or a dangling symlink (TMEM_E_INVALID_ARG /
 * TMEM_E_NOT_FOUND, nothing created); write through a symlink to its target;
 * open a temporary in the target's directory (anonymous with O_TMPFILE). Write
 * to fd (tmem__os_write_all) or to the stream. commit: flush, fsync, rename
 * over the target, close; on failure the temporary is removed and the
 * target is untouched. abort: close and remove the temporary, nothing else.
 * *why is a static string, "" when nothing more is known. */
typedef struct tmem__os_afile {
    int fd;             /* -1 when closed */
    bool anon;          /* O_TMPFILE: no name until commit */
    FILE *stream;       /* tmem__os_afile_stream's, over fd */
    char final[4096];   /* the path renamed over (a symlink's target) */
    char tmp[4096];     /* our temporary name; "" while none exists */
} tmem__os_afile;
/* The refusals of create alone, creating nothing. */
tmem_status tmem__os_afile_check(const char *path, const char **why);
tmem_status tmem__os_afile_create(const char *path, tmem__os_afile *af, const char **why);
FILE *tmem__os_afile_stream(tmem__os_afile *af);
tmem_status tmem__os_afile_commit(tmem__os_afile *af);
void tmem__os_afile_abort(tmem__os_afile *af);
/* Both paths name one file (same device and inode, symlinks followed). */
bool tmem__os_same_file(const char *a, const char *b);

/* ---- advice, locking, residency ---- */
typedef enum tmem__os_advice {
    TMEM__OS_ADVISE_DONTNEED, /* drop now; next touch reads zeros (anon) */
    TMEM__OS_ADVISE_FREE,     /* drop lazily under pressure (MADV_FREE) */
    TMEM__OS_ADVISE_WILLNEED,
    TMEM__OS_ADVISE_COLD,     /* MADV_COLD: deactivate */
    TMEM__OS_ADVISE_PAGEOUT,  /* MADV_PAGEOUT: reclaim now */
    TMEM__OS_ADVISE_HUGEPAGE,
    TMEM__OS_ADVISE_NOHUGEPAGE,
} tmem__os_advice;
/* TMEM_E_UNSUPPORTED when the kernel lacks that advice. */
tmem_status tmem__os_advise(void *addr, size_t size, tmem__os_advice advice);
tmem_status tmem__os_lock(void *addr, size_t size);
tmem_status tmem__os_unlock(void *addr, size_t size);
/* Count resident pages in [addr, addr+size) (mincore). */
tmem_status tmem__os_residency(void *addr, size_t size, size_t *out_resident_pages);

/* ---- footprint, limits, pressure ---- */
tmem_status tmem__os_footprint(tmem_footprint *out);
tmem_status tmem__os_footprint_pid(int pid, tmem_footprint *out); /* pid 0 = self */
tmem_status tmem__os_limits(tmem_system_limits *out);
/* Memory pressure signals: PSI "some avg10" (percent*100) and the cgroup's
 * memory.events counters. Fields the OS lacks read as 0; TMEM_E_UNSUPPORTED
 * when neither source exists. */
typedef struct tmem__os_pressure_info {
    uint32_t psi_some_avg10_x100;
    uint32_t psi_full_avg10_x100;
    uint64_t events_high, events_max, events_oom, events_oom_kill;
    bool has_psi, has_events;
} tmem__os_pressure_info;
tmem_status tmem__os_pressure(tmem__os_pressure_info *out);

/* ---- sockets, fd passing, fd identity, processes (os_socket.c) ---- */
/* Most fds one message carries. */
#define TMEM__OS_MAX_PASS_FDS 4
/* A connected AF_UNIX SOCK_SEQPACKET pair (close-on-exec). */
tmem_status tmem__os_socketpair(int out_fds[2]);
/* Send one message of len bytes with nfds fds (SCM_RIGHTS), MSG_NOSIGNAL.
 * TMEM_E_IO when the peer is gone or the send was short. */
tmem_status tmem__os_send_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds);
typedef struct tmem__os_recv_info {
    size_t len;             /* payload bytes received (0: peer closed) */
    size_t nfds;            /* fds stored in the caller's array */
    size_t extra_fds;       /* fds beyond max_fds: received and closed */
    bool truncated;         /* MSG_TRUNC: the payload did not fit */
    bool control_truncated; /* MSG_CTRUNC: the kernel dropped fds */
} tmem__os_recv_info;
/* Receive one message into buf (cap bytes) and up to max_fds fds
 * (close-on-exec, counted as live; unused slots -1). Extra fds are closed. */
tmem_status tmem__os_recv_fds(int sock, void *buf, size_t cap, tmem__os_recv_info *out, int *fds, size_t max_fds);
typedef struct tmem__os_fd_stat_info {
    uint64_t size, dev, ino;
    bool regular;
} tmem__os_fd_stat_info;
/* fstat: size and identity (dev, inode) of an fd. */
tmem_status tmem__os_fd_stat(int fd, tmem__os_fd_stat_info *out);
/* F_DUPFD_CLOEXEC. */
tmem_status tmem__os_fd_dup(int fd, int *out_fd);
/* Queries, never injected: this process's pid; whether a pid names a live
 * process (false for pid <= 0; a zombie counts as alive until reaped). */
int tmem__os_pid_self(void);
bool tmem__os_pid_alive(int pid);

/* ---- byte streams the caller opened (os_file.c): tmem_*_write_*(FILE *) ---- */
/* Write all len bytes to f (fwrite). TMEM_E_IO when the stream takes fewer
 * (a full disk, a closed pipe, a stream opened for reading). */
tmem_status tmem__os_stream_write(FILE *f, const void *buf, size_t len);

/* ---- threads and locks (os_thread.c) ----
 * Wrappers so the rest of the library never names pthreads. Lock, trylock
 * and unlock are inline (they sit on the allocation paths) and cannot fail
 * on a mutex that init made; init may fail on other systems (POSIX allows
 * ENOMEM/EAGAIN) and returns the status, but is not injected: glibc's never
 * fails for these attributes, and a sweep would count a failure the OS never
 * produces. Thread creation is injected (THREAD_CREATE): EAGAIN is real. */
typedef struct tmem__os_mutex {
    pthread_mutex_t m;
} tmem__os_mutex;
typedef struct tmem__os_cond {
    pthread_cond_t c;
} tmem__os_cond;
typedef struct tmem__os_thread {
    pthread_t t;
} tmem__os_thread;
enum tmem__os_mutex_flag {
    TMEM__OS_MUTEX_RECURSIVE = 1u << 0, /* the owner may lock it again */
};
tmem_status tmem__os_mutex_init(tmem__os_mutex *m, unsigned mutex_flags);
void tmem__os_mutex_destroy(tmem__os_mutex *m);
static inline void tmem__os_mutex_lock(tmem__os_mutex *m) { (void)pthread_mutex_lock(&m->m); }
/* true when taken; false when another thread holds it. */
static inline bool tmem__os_mutex_trylock(tmem__os_mutex *m) { return pthread_mutex_trylock(&m->m) == 0; }
static inline void tmem__os_mutex_unlock(tmem__os_mutex *m) { (void)pthread_mutex_unlock(&m->m); }
tmem_status tmem__os_cond_init(tmem__os_cond *c);
void tmem__os_cond_destroy(tmem__os_cond *c);
/* Release m (held by the caller), wait for a broadcast (or a spurious
 * wake-up: callers loop on their condition), take m again. */
void tmem__os_cond_wait(tmem__os_cond *c, tmem__os_mutex *m);
void tmem__os_cond_broadcast(tmem__os_cond *c);
/* Start fn(arg) on a new joinable thread. TMEM_E_NO_MEMORY when the system
 * has no thread to give (EAGAIN); *out is untouched on failure. */
tmem_status tmem__os_thread_create(tmem__os_thread *out, void *(*fn)(void *), void *arg);
/* Wait for a thread of tmem__os_thread_create to end (its result dropped). */
void tmem__os_thread_join(tmem__os_thread t);

/* ---- shared libraries (os_lib.c): the GPU drivers, loaded at run time ---- */
/* dlopen(name, RTLD_NOW | RTLD_LOCAL). TMEM_E_NOT_FOUND when the library
 * is not there (or cannot be loaded); *out NULL on failure. Injected
 * (LIB_OPEN), so tests can take the "driver absent" path on any machine. */
tmem_status tmem__os_lib_open(const char *name, void **out);
/* The address of `symbol` in a library of tmem__os_lib_open; NULL when absent. */
void *tmem__os_lib_symbol(void *lib, const char *symbol);
/* dlclose; NULL is a no-op. Never injected (nothing a caller could do). */
void tmem__os_lib_close(void *lib);
/* Shared objects mapped in the process now (dl_iterate_phdr), and: pin
 * every object that appeared after the first `before` of them, so it stays
 * mapped for the process (RTLD_NODELETE; at most 32). Drivers that are not
 * unload-safe (Vulkan ICDs) load their own dependencies: count before, pin
 * after. Queries, never injected. */
size_t tmem__os_lib_count(void);
void tmem__os_lib_pin_since(size_t before);

/* ---- fault injection and accounting for tests ---- */
/* Arm: after `countdown` more successful calls of kind `which` (TMEM__OS_ANY
 * counts all kinds), the next one fails with `err` (an errno value; 0 =
 * ENOMEM). With persistent=true every later call of that kind fails too until
 * disarmed. State is per thread.
 * Only *eligible* calls count down and fail: calls outside a benign section
 * and, under TMEM__OS_ANY, not teardown calls (RELEASE, UNMAP, CLOSE,
 * DECOMMIT, UNLOCK, UNLINK — they undo earlier calls, so rollbacks can always run;
 * arm them by their own kind to fail them). See docs/os.md. */
void tmem__os_fault_arm(tmem__os_call which, uint64_t countdown, bool persistent, int err);
void tmem__os_fault_disarm(void);
/* Number of eligible calls (see above) made on this thread since the last
 * reset, armed or not: a sweep runs its scenario disarmed to learn n. */
uint64_t tmem__os_fault_calls(void);
void tmem__os_fault_reset_count(void);
/* Did this thread's armed fault fire? */
bool tmem__os_fault_fired(void);
/* Benign section: calls inside (hints such as WILLNEED, THP advice) are not
 * failed by injection, so a sweep does not report harmless paths. Nests. */
void tmem__os_benign_begin(void);
void tmem__os_benign_end(void);
/* Live mappings and fds created through this layer (process-wide, atomic):
 * leak checks compare before and after. */
int64_t tmem__os_live_mappings(void);
int64_t tmem__os_live_fds(void);

/* The hook every injectable call runs first; returns TMEM_OK or the injected
 * failure. */
tmem_status tmem__os_fault_hit(tmem__os_call call);
/* errno -> status: ENOMEM/EAGAIN -> NO_MEMORY, EPERM/EACCES -> PERMISSION,
 * EINVAL -> INVALID_ARG, ENOSYS/EOPNOTSUPP -> UNSUPPORTED, EIO -> IO, else OS. */
tmem_status tmem__os_status_from_errno(int err);

#endif /* TMEM_OS_H */
