/* fixture: a public heap header */
#include "context.h"
