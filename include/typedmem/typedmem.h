/**
 * @file typedmem.h
 * @brief Umbrella header: include this to get the whole public API.
 */
#ifndef TYPEDMEM_H
#define TYPEDMEM_H

#include "common.h"
#include "status.h"
#include "parse.h"
#include "system.h"
#include "placement.h"
#include "context.h"
#include "heap.h"
#include "trace.h"
#include "kv.h"
#include "plan.h"
#include "plan_heap.h"
#include "plan_io.h"
#include "out_file.h"
#include "model.h"
#include "json.h"
#include "safetensors.h"
#include "surface.h"
#include "device.h"

#endif /* TYPEDMEM_H */
