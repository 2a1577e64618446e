/* kern_insn: runs one kernel path `reps` times on one shape, for
 * tests/arm64/insn_count.sh, which counts the guest instructions qemu
 * executes (-one-insn-per-tb -d exec,nochain: one log line per
 * instruction) at reps = R and reps = 0 and divides the difference by
 * R x outputs. Not a test: it checks nothing but that the path exists.
 *
 *   kern_insn KERNEL PATH N_IN N_OUT N_TOK REPS
 *   KERNEL: f32 f16 bf16 q8_0 q4_K q6_K (matmul) | dot silu_mul exp_sub_sum
 *   PATH:   scalar | neon | dotprod      (vector ops: scalar | neon) */
#include <stdio.h>
#include <string.h>
#include "kern_test_util.h"

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: kern_insn KERNEL PATH N_IN N_OUT N_TOK REPS\n");
        return 2;
    }
    const char *kernel = argv[1], *path = argv[2];
    const int64_t n_in = atoll(argv[3]), n_out = atoll(argv[4]), n_tok = atoll(argv[5]);
    const int reps = atoi(argv[6]);
    const bool scalar = strcmp(path, "scalar") == 0;
    tmem_rng r;
    tmem_rng_init(&r, 1);
    float *x = kern_test_alloc((size_t)(n_in * n_tok) * sizeof(float));
    float *y = kern_test_alloc((size_t)(n_out * n_tok + n_in) * sizeof(float));
    kern_test_fill(&r, x, n_in * n_tok, 1.0f);
    float sink = 0.0f;
    if (!strcmp(kernel, "dot") || !strcmp(kernel, "silu_mul") || !strcmp(kernel, "exp_sub_sum")) {
        float *b = kern_test_alloc((size_t)n_in * sizeof(float));
        kern_test_fill(&r, b, n_in, 1.0f);
        for (int k = 0; k < reps; k++) {
            if (!strcmp(kernel, "dot"))
                sink += scalar ? tmrt__kern_dot_ref(x, b, n_in) : tmrt__kern__dot_f32_neon(x, b, n_in);
            else if (!strcmp(kernel, "silu_mul"))
                scalar ? tmrt__kern_silu_mul_ref(y, x, b, n_in) : tmrt__kern__silu_mul_neon(y, x, b, n_in);
            else
                sink += scalar ? tmrt__kern_exp_sub_sum_ref(y, 0.5f, n_in)
                               : tmrt__kern__exp_sub_sum_neon(y, 0.5f, n_in);
        }
        free(b);
    } else {
        int ti = 0;
        while (ti < KERN_TEST_NTYPES && strcmp(kern_test_type_name(kern_test_types[ti]), kernel)) ti++;
        if (ti == KERN_TEST_NTYPES) {
            fprintf(stderr, "kern_insn: unknown kernel %s\n", kernel);
            return 2;
        }
        const uint32_t type = kern_test_types[ti];
        const kern_type_traits *tr = tmrt__kern__traits(type);
        kern_wmat w = kern_test_wmat(&r, type, n_in, n_out, 0, 0.1f, NULL);
        const size_t xs = tr->xform == KERN_X_F32 ? (size_t)n_in * sizeof(float)
                                                  : tmrt__kern__xrow_bytes(tr->xform, n_in);
        void *xq = tr->xform == KERN_X_F32 ? x : kern_test_alloc(xs * (size_t)n_tok);
        for (int64_t t = 0; t < n_tok && tr->xform != KERN_X_F32; t++) {
            if (tr->xform == KERN_X_Q8_0) tmrt__kern__quantize_q8_0(x + t * n_in, (void *)((char *)xq + t * xs), n_in);
            else tmrt__kern__quantize_q8_k(x + t * n_in, (void *)((char *)xq + t * xs), n_in);
        }
        kern_tile_fn tile = scalar ? tmrt__kern__tile_scalar
                                   : tmrt__kern__tile_neon(type, !strcmp(path, "dotprod")
                                                                     ? KERN_CPU_NEON | KERN_CPU_DOTPROD
                                                                     : KERN_CPU_NEON);
        for (int k = 0; k < reps; k++) tile(&w, xq, xs, n_tok, 0, n_out, y, (size_t)n_out);
        sink += y[0];
        if (xq != x) free(xq);
        free((void *)w.data);
    }
    printf("%s %s done (%g)\n", kernel, path, (double)sink);
    free(x);
    free(y);
    return 0;
}
