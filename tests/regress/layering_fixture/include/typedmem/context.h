/* fixture: context reaching up to heap */
#include "heap.h"
