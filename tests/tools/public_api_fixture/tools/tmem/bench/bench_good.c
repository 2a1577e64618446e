/* fixture: the public and testing APIs only: nothing to report */
#include "tmemrt/testing.h"
#include "typedmem/testing.h"
