/* fixture: device may use the heap layer, but not a header private to src/heap/ */
#include "base/base.h"
#include "heap/heap_internal.h"
