/* fixture: core reaches up to the heap API */
#include "typedmem/heap.h"
