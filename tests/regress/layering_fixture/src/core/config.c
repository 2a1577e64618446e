/* fixture: OS calls outside src/os/ (check_os_calls.cmake). Reported: the
 * getenv, the lock, the <dlfcn.h>. Not reported: this comment's dlopen(),
 * the string, the member call and the prefixed name below. */
#include <dlfcn.h>
struct be { int (*write)(int); };
int tmem__os_read(int);
const char *config_path(struct be *b, void *m) {
    const char *s = "getenv(\"X\")"; /* sysconf(1) */
    (void)b->write(1); (void)tmem__os_read(2); /* a block
    comment over lines: mmap(0) */ pthread_mutex_lock(m);
    return getenv ("TMEM_CONFIG") ? s : 0; // exit(1)
}
