/* fixture: a second source named solve.c (src/plan/solve.c is the first):
 * check_calls.cmake maps objects by basename and must refuse the tree */
#include "base/base.h"
