/* fixture: the planner must be pure (base only) */
#include "base/base.h"
#include "core/internal.h"
