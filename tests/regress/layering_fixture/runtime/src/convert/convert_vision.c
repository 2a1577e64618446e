/* fixture: another runtime directory including vision's private header */
#include "vision/vision_internal.h"
