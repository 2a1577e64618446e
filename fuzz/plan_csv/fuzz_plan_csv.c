/* libFuzzer target for the planner's CSV reader: whatever the bytes, parsing
 * returns a status without crashing; a parsed problem is then planned in
 * heuristic mode and the plan must pass the validator. */
#include "fuzz.h"
#include "typedmem/plan.h"
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tmem_plan_problem *p = NULL;
    tmem_plan_error err;
    if (tmem_plan_problem_parse_csv((const char *)data, size, &p, &err) != TMEM_OK) return 0;
    uint32_t n = tmem_plan_problem_count(p);
    if (n <= 2000) {
        tmem_plan_desc d = {0};
        d.flags = TMEM_PLAN_HEURISTIC_ONLY;
        tmem_plan *pl;
        if (tmem_plan_solve(p, &d, &pl) == TMEM_OK) {
            uint64_t *off = malloc((size_t)n * sizeof *off);
            if (off) {
                for (uint32_t i = 0; i < n; i++) off[i] = tmem_plan_offset(pl, i);
                if (tmem_plan_validate(p, off, 0, NULL) != TMEM_OK) abort();
                free(off);
            }
            tmem_plan_destroy(pl);
        }
    }
    tmem_plan_problem_destroy(p);
    return 0;
}
