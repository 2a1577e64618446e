/* fixture: includes that dodge the table: no '/' but not a file of src/core/,
 * and a climb with ".." into another layer's private header */
#include "tlsf.h"
#include "../heap/heap_internal.h"
