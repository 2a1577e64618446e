/* fixture: the planner may use base and os (its probe thread), never core */
#include "base/base.h"
#include "core/internal.h"
