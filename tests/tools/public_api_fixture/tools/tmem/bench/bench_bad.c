/* fixture: a bench reaching the runtime's internals (tools/public_api_catches_internals);
 * each of the three lines below must be reported */
#include "kern/kern.h"
#include "core/internal.h"
static void bad(void) { tmrt__kern_matmul(0, 0, 0, 0, 0, 0, 0, 0); }
