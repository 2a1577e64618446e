/* Links the installed runtime (typedmem::runtime) and its library: prints
 * both versions. */
#include <stdio.h>
#include <tmemrt/runtime.h>
#include <typedmem/typedmem.h>

int main(void) {
    const char *v = tmrt_version();
    if (!v || !*v) return 1;
    printf("runtime %s on typedmem %d.%d.%d\n", v, TMEM_VERSION_MAJOR, TMEM_VERSION_MINOR, TMEM_VERSION_PATCH);
    return 0;
}
