/*
 * libFuzzer target: the /proc and cgroup parsers of the OS layer
 * (src/os/os_parse.c). The first byte picks the parser, the rest is the text.
 * Besides "no crash, no read past the end" (ASan), it checks the contracts:
 * outputs are zero / empty on failure and paths are NUL-terminated.
 */
#include "fuzz.h"
#include "os/os_internal.h"

#include <stdlib.h>
#include <string.h>

static void check(bool ok) {
    if (!ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    unsigned which = data[0] % 7;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    switch (which) {
    case 0: {
        tmem_footprint f;
        if (tmem__os_parse_smaps_rollup(text, len, &f) != TMEM_OK)
            check(f.rss == 0 && f.private_dirty == 0 && f.anonymous == 0 && f.swap == 0);
        break;
    }
    case 1: {
        tmem__os_meminfo m;
        if (tmem__os_parse_meminfo(text, len, &m) != TMEM_OK) check(m.mem_total == 0 && m.mem_available == 0);
        else check(m.has_available || m.mem_available == 0);
        break;
    }
    case 2: {
        char a[64], b[16];
        tmem_status st = tmem__os_parse_proc_cgroup(text, len, a, sizeof a, b, sizeof b);
        check(memchr(a, '\0', sizeof a) && memchr(b, '\0', sizeof b));
        check(st == TMEM_OK ? (a[0] == '/' || b[0] == '/') : (a[0] == '\0' && b[0] == '\0'));
        break;
    }
    case 3: {
        tmem__os_cgroup_mounts m;
        tmem_status st = tmem__os_parse_mountinfo(text, len, &m);
        check(memchr(m.v2_mount, '\0', sizeof m.v2_mount) && memchr(m.v1_root, '\0', sizeof m.v1_root));
        if (st == TMEM_OK) check(m.v2_mount[0] || m.v1_mount[0]);
        break;
    }
    case 4: {
        uint64_t v = 1;
        if (tmem__os_parse_cgroup_value(text, len, &v) != TMEM_OK) check(v == 0);
        else check(v < (1ull << 62));
        break;
    }
    case 5: {
        uint32_t s = 1, f = 1;
        bool hf = true;
        if (tmem__os_parse_psi(text, len, &s, &f, &hf) != TMEM_OK) check(s == 0 && f == 0 && !hf);
        else check(hf || f == 0);
        break;
    }
    default: {
        tmem__os_pressure_info p;
        memset(&p, 0, sizeof p);
        (void)tmem__os_parse_memory_events(text, len, &p);
        break;
    }
    }
    return 0;
}
