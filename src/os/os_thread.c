/*
 * Threads and locks (os.h): the library's only pthread calls but the inline
 * lock / trylock / unlock in os.h. A failed init leaves nothing to destroy.
 */
#include "os/os_internal.h"

#include <errno.h>

tmem_status tmem__os_mutex_init(tmem__os_mutex *m, unsigned mutex_flags) {
    if (!m || (mutex_flags & ~(unsigned)TMEM__OS_MUTEX_RECURSIVE)) return TMEM_E_INVALID_ARG;
    if (!(mutex_flags & TMEM__OS_MUTEX_RECURSIVE))
        return pthread_mutex_init(&m->m, NULL) ? TMEM_E_NO_MEMORY : TMEM_OK;
    pthread_mutexattr_t a;
    if (pthread_mutexattr_init(&a)) return TMEM_E_NO_MEMORY;
    int e = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    if (!e) e = pthread_mutex_init(&m->m, &a);
    pthread_mutexattr_destroy(&a);
    return e ? TMEM_E_NO_MEMORY : TMEM_OK;
}

void tmem__os_mutex_destroy(tmem__os_mutex *m) { (void)pthread_mutex_destroy(&m->m); }

tmem_status tmem__os_cond_init(tmem__os_cond *c) {
    if (!c) return TMEM_E_INVALID_ARG;
    return pthread_cond_init(&c->c, NULL) ? TMEM_E_NO_MEMORY : TMEM_OK;
}

void tmem__os_cond_destroy(tmem__os_cond *c) { (void)pthread_cond_destroy(&c->c); }

void tmem__os_cond_wait(tmem__os_cond *c, tmem__os_mutex *m) { (void)pthread_cond_wait(&c->c, &m->m); }

void tmem__os_cond_broadcast(tmem__os_cond *c) { (void)pthread_cond_broadcast(&c->c); }

tmem_status tmem__os_thread_create(tmem__os_thread *out, void *(*fn)(void *), void *arg) {
    if (!out || !fn) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_THREAD_CREATE);
    if (st != TMEM_OK) return st;
    pthread_t t;
    int e = pthread_create(&t, NULL, fn, arg);
    if (e) return tmem__os_status_from_errno(e);
    out->t = t;
    return TMEM_OK;
}

void tmem__os_thread_join(tmem__os_thread t) { (void)pthread_join(t.t, NULL); }
