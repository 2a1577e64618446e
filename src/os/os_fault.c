/*
 * Fault injection and live-resource accounting for the OS layer (tests).
 *
 * Every injectable tmem__os_* call starts with tmem__os_fault_hit(kind).
 * State is per thread (a test arms faults on the thread that runs the
 * scenario; other threads are never disturbed), so there is no lock.
 *
 * Rules (SQLite's faultsim, adapted):
 *  - Only *eligible* calls are counted and can fail. A call is eligible when
 *    it is outside a benign section and, for an arm of TMEM__OS_ANY, is not a
 *    teardown call (release, unmap, close, decommit, unlock, unlink). Teardown calls
 *    undo what an earlier call did; failing them under a sweep would only
 *    prove that a failed munmap leaks, which no caller can avoid. They are
 *    still failed when armed by their own kind, so their error returns can be
 *    tested one by one.
 *  - countdown N: N more eligible calls of the armed kind succeed, the next
 *    fails. persistent: every later eligible call of that kind fails too.
 *  - tmem__os_fault_calls() counts eligible calls of any kind (armed or not)
 *    since the last reset; a sweep runs its scenario once disarmed to learn n
 *    and then arms countdown 0..n-1.
 *
 * The live counters are process-wide atomics: mappings and fds created
 * through this layer minus those given back. Leak checks compare them.
 */
#include "os/os_internal.h"

#include <errno.h>
#include <stdatomic.h>

#ifndef TMEM_FAULT_INJECTION
#define TMEM_FAULT_INJECTION 0
#endif

typedef struct fault_state {
    bool armed;
    bool persistent;
    bool fired;
    tmem__os_call which;
    uint64_t countdown;
    int err;
    uint64_t calls;
    uint32_t benign_depth;
} fault_state;

static _Thread_local fault_state g_fault;

static atomic_int_fast64_t g_live_mappings;
static atomic_int_fast64_t g_live_fds;

#if TMEM_FAULT_INJECTION
static bool is_teardown(tmem__os_call call) {
    return call == TMEM__OS_RELEASE || call == TMEM__OS_UNMAP || call == TMEM__OS_CLOSE ||
           call == TMEM__OS_DECOMMIT || call == TMEM__OS_UNLOCK || call == TMEM__OS_UNLINK;
}

/* A breakpoint target: every injected failure passes here (sqlite3Fault). */
static tmem_status fault_fire(tmem__os_call call, int err) {
    (void)call;
    errno = err;
    return tmem__os_status_from_errno(err);
}
#endif

tmem_status tmem__os_fault_hit(tmem__os_call call) {
#if TMEM_FAULT_INJECTION
    fault_state *f = &g_fault;
    if (f->benign_depth > 0) return TMEM_OK;
    bool teardown = is_teardown(call);
    if (!teardown) f->calls++;
    if (!f->armed) return TMEM_OK;
    if (f->which == TMEM__OS_ANY ? teardown : f->which != call) return TMEM_OK;
    if (f->fired) {
        if (f->persistent) return fault_fire(call, f->err);
        return TMEM_OK;
    }
    if (f->countdown > 0) {
        f->countdown--;
        return TMEM_OK;
    }
    f->fired = true;
    return fault_fire(call, f->err);
#else
    (void)call;
    return TMEM_OK;
#endif
}

void tmem__os_fault_arm(tmem__os_call which, uint64_t countdown, bool persistent, int err) {
    fault_state *f = &g_fault;
    if ((unsigned)which > (unsigned)TMEM__OS_ANY) which = TMEM__OS_ANY;
    f->armed = true;
    f->persistent = persistent;
    f->fired = false;
    f->which = which;
    f->countdown = countdown;
    f->err = err ? err : ENOMEM;
}

void tmem__os_fault_disarm(void) {
    g_fault.armed = false;
    g_fault.persistent = false;
    g_fault.countdown = 0;
    /* fired stays readable after disarm so a sweep can ask afterwards. */
}

uint64_t tmem__os_fault_calls(void) { return g_fault.calls; }
void tmem__os_fault_reset_count(void) { g_fault.calls = 0; }
bool tmem__os_fault_fired(void) { return g_fault.fired; }

void tmem__os_benign_begin(void) { g_fault.benign_depth++; }
void tmem__os_benign_end(void) {
    if (g_fault.benign_depth > 0) g_fault.benign_depth--;
}

int64_t tmem__os_live_mappings(void) { return (int64_t)atomic_load(&g_live_mappings); }
int64_t tmem__os_live_fds(void) { return (int64_t)atomic_load(&g_live_fds); }

void tmem__os_count_mapping(int delta) { atomic_fetch_add(&g_live_mappings, delta); }
void tmem__os_count_fd(int delta) { atomic_fetch_add(&g_live_fds, delta); }

tmem_status tmem__os_status_from_errno(int err) {
    switch (err) {
    case 0: return TMEM_OK;
    case ENOMEM:
    case EAGAIN: return TMEM_E_NO_MEMORY;
    case EPERM:
    case EACCES: return TMEM_E_PERMISSION;
    case EINVAL: return TMEM_E_INVALID_ARG;
    case ENOSYS:
#if defined(EOPNOTSUPP)
    case EOPNOTSUPP:
#endif
#if defined(ENOTSUP) && (!defined(EOPNOTSUPP) || ENOTSUP != EOPNOTSUPP)
    case ENOTSUP:
#endif
        return TMEM_E_UNSUPPORTED;
    case EIO: return TMEM_E_IO;
    default: return TMEM_E_OS;
    }
}
