// matvec_main.glsl: the mat-vec loop and the reduction over the workgroup
// (subgroupAdd then shared memory with SUBGROUP; a shared-memory tree
// without). Included after the type's mv_unit (and mv_units, mv_tail).
#if SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
shared float red[ROWS * MAX_TOK * WG];
#else
shared float red[ROWS * MAX_TOK * WG];
#endif

void main() {
    uint g = group_id(), rg = g % pc.row_groups, t0 = (g / pc.row_groups) * MAX_TOK;
    if (t0 >= pc.n_tok) return; // whole workgroup
    nt = min(MAX_TOK, pc.n_tok - t0);
    for (uint t = 0u; t < MAX_TOK; t++) {
        uint row = t < nt ? t0 + t : t0;
        if ((pc.flags & FLAG_XROWS) != 0u) row = xrows[row];
        xoff[t] = row * pc.ldx;
    }
    for (uint r = 0u; r < ROWS; r++)
        for (uint t = 0u; t < MAX_TOK; t++) acc[r][t] = 0.0;
    uint tid = gl_LocalInvocationID.x, row0 = rg * ROWS, nu = mv_units();
    for (uint u = tid; u < nu; u += WG)
        for (uint r = 0u; r < ROWS; r++)
            if (row0 + r < pc.n_out) mv_unit(pc.w_base + (row0 + r) * pc.row_bytes, u, r);
    for (uint r = 0u; r < ROWS; r++)
        if (row0 + r < pc.n_out) mv_tail(pc.w_base + (row0 + r) * pc.row_bytes, tid, r);
    // only the nt tokens of this group (nt is the same for the whole workgroup)
#if SUBGROUP
    uint nsg = gl_NumSubgroups;
    for (uint r = 0u; r < ROWS; r++)
        for (uint t = 0u; t < MAX_TOK; t++) {
            if (t >= nt) break;
            float s = subgroupAdd(acc[r][t]);
            if (subgroupElect()) red[(r * MAX_TOK + t) * WG + gl_SubgroupID] = s;
        }
#else
    uint nsg = WG;
    for (uint r = 0u; r < ROWS; r++)
        for (uint t = 0u; t < MAX_TOK; t++) {
            if (t >= nt) break;
            red[(r * MAX_TOK + t) * WG + tid] = acc[r][t];
        }
#endif
    barrier();
    for (uint v = tid; v < ROWS * MAX_TOK; v += WG) {
        uint r = v / MAX_TOK, t = v % MAX_TOK;
        if (t >= nt || row0 + r >= pc.n_out) continue;
        float s = 0.0;
        for (uint i = 0u; i < nsg; i++) s += red[v * WG + i];
        y[(t0 + t) * pc.ldy + pc.y_col0 + row0 + r] = s;
    }
}
