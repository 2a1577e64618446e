/* fixture: os reaches up to core */
#include "base/base.h"
#include "core/internal.h"
