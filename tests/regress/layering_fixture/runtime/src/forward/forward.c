/* fixture: the runtime reaching the library's internals by a relative path
 * that exists (it must land inside runtime/ to count as the runtime's own) */
#include "../../../src/core/internal.h"
