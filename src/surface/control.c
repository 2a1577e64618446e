/*
 * The control page: seed and use counts shared by every holder of a surface.
 *
 * Layout (tmem__surface_ctl): magic, version, uid, an atomic seed and
 * TMEM__SURFACE_CTL_SLOTS use slots {pid, uses}. Each handle (one per process
 * per import) claims one slot and is the only writer of its `uses`; the use
 * count is the sum over slots of live processes. A process that dies leaves
 * its slot behind with its uses; readers skip it (its pid is gone) and the
 * next claim recycles it. So a killed peer cannot pin the surface "in use".
 *
 * Every other holder can write this page, so nothing read from it is trusted:
 * pids <= 0 are never given to the OS, sums saturate, and no size or address
 * is ever derived from it.
 */
#include "surface/surface_internal.h"
#include "os/os.h"
#include <string.h>

_Static_assert(sizeof(tmem__surface_ctl) <= 4096, "control block fits the smallest page");
/* Atomics shared between processes must be lock-free: a lock-based
 * implementation would keep its lock in one process's private memory. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "lock-free 32-bit atomics");

void tmem__surface_ctl_init(tmem__surface_ctl *ctl, uint64_t uid) {
    ctl->magic = TMEM__SURFACE_CTL_MAGIC;
    ctl->version = TMEM__SURFACE_CTL_VERSION;
    ctl->uid = uid;
    atomic_store_explicit(&ctl->seed, 0, memory_order_relaxed);
    for (uint32_t i = 0; i < TMEM__SURFACE_CTL_SLOTS; i++) {
        atomic_store_explicit(&ctl->slots[i].pid, 0, memory_order_relaxed);
        atomic_store_explicit(&ctl->slots[i].uses, 0, memory_order_relaxed);
    }
}

bool tmem__surface_ctl_valid(const tmem__surface_ctl *ctl, uint64_t uid) {
    /* Plain reads: these fields are written once, before the page is shared. */
    return ctl->magic == TMEM__SURFACE_CTL_MAGIC && ctl->version == TMEM__SURFACE_CTL_VERSION && ctl->uid == uid;
}

tmem_status tmem__surface_ctl_claim(tmem__surface_ctl *ctl, uint32_t *out_slot) {
    int self = tmem__os_pid_self();
    /* First a free slot, then one of a dead process. */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < TMEM__SURFACE_CTL_SLOTS; i++) {
            tmem__surface_slot *s = &ctl->slots[i];
            int32_t pid = atomic_load_explicit(&s->pid, memory_order_acquire);
            if (pass == 0 ? pid != 0 : (pid == 0 || pid == self || tmem__os_pid_alive(pid))) continue;
            if (!atomic_compare_exchange_strong_explicit(&s->pid, &pid, self, memory_order_acq_rel,
                                                         memory_order_relaxed))
                continue;
            atomic_store_explicit(&s->uses, 0, memory_order_release);
            *out_slot = i;
            return TMEM_OK;
        }
    }
    return tmem__err(TMEM_E_FULL);
}

void tmem__surface_ctl_unclaim(tmem__surface_ctl *ctl, uint32_t slot) {
    if (slot >= TMEM__SURFACE_CTL_SLOTS) return;
    atomic_store_explicit(&ctl->slots[slot].uses, 0, memory_order_release);
    atomic_store_explicit(&ctl->slots[slot].pid, 0, memory_order_release);
}

uint32_t tmem__surface_ctl_uses(tmem__surface_ctl *ctl) {
    int self = tmem__os_pid_self();
    uint64_t sum = 0;
    for (uint32_t i = 0; i < TMEM__SURFACE_CTL_SLOTS; i++) {
        tmem__surface_slot *s = &ctl->slots[i];
        int32_t pid = atomic_load_explicit(&s->pid, memory_order_acquire);
        if (pid == 0) continue;
        uint32_t uses = atomic_load_explicit(&s->uses, memory_order_acquire);
        /* Only slots with uses cost a liveness check. */
        if (uses == 0 || (pid != self && !tmem__os_pid_alive(pid))) continue;
        sum += uses;
    }
    return sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
}
