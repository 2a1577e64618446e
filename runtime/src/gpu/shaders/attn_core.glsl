// attn_core.glsl: the attention kernel's body (attention.comp over the paged
// KV cache, attention_dense.comp over plain K/V rows): a workgroup takes QT
// tokens x up to 8 query heads of one KV head (R = QT*GS <= 8 query rows)
// and one split of the keys; per tile of WG keys, thread j scores key j
// against the R rows (q in shared memory), the rows' running max and sum
// are updated, and each thread accumulates the probabilities times V for
// the 32-bit words of the head it owns. With one split the result is
// written normalised (times sigmoid(gate) with FLAG_GATE); with several each
// writes (m, l, acc) to scratch and attn_combine.comp merges them.
// The including file defines key_row, key_of/val_of (a key's K/V row of a
// KV head), key_load/key_load4/val_load (words of it), keys_total(n_past)
// and CAUSAL, and the push constants n_tok, n_head, n_kv, hd, qts, qhs,
// ots, ohs, gts, ghs, n_split, qt, flags, n_past, scale.
shared float qs[MAX_R * MAX_HD];
shared float sc[MAX_R][WG];
shared float part[MAX_R][16];
shared float m_s[MAX_R], l_s[MAX_R], a_s[MAX_R];

float exp_or0(float v, float m) { return v == -1.0 / 0.0 ? 0.0 : exp(v - m); }

void main() {
    uint G = pc.n_head / pc.n_kv, GS = min(G, MAX_R), n_gc = (G + GS - 1u) / GS;
    uint n_qt = (pc.n_tok + pc.qt - 1u) / pc.qt, g = group_id();
    uint qt = g % n_qt, rest = g / n_qt, kvh = rest % pc.n_kv, gc = (rest / pc.n_kv) % n_gc;
    uint split = rest / (pc.n_kv * n_gc);
    if (split >= pc.n_split) return;
    uint tid = gl_LocalInvocationID.x, t0 = qt * pc.qt, n_t = min(pc.qt, pc.n_tok - t0);
    uint g0 = gc * GS, ng = min(GS, G - g0), R = n_t * ng;
    uint n_past = n_past_of(pc.flags, pc.n_past);
    bool f32 = (pc.flags & FLAG_F32) != 0u;
    uint words = f32 ? pc.hd : pc.hd / 2u;
    // this workgroup's keys: its split of the keys its tokens see
    uint total = keys_total(n_past), chunk = (total + pc.n_split - 1u) / pc.n_split;
    uint kbeg = split * chunk, kend = min(kbeg + chunk, CAUSAL ? n_past + t0 + n_t : total);
    for (uint i = tid; i < R * pc.hd; i += WG) {
        uint r = i / pc.hd, d = i % pc.hd, t = t0 + r / ng, h = kvh * G + g0 + r % ng;
        qs[i] = q[t * pc.qts + h * pc.qhs + d] * pc.scale;
    }
    if (tid < MAX_R) m_s[tid] = -1.0 / 0.0, l_s[tid] = 0.0;
    float acc[MAX_R][2u * MAX_W];
    for (uint r = 0u; r < MAX_R; r++)
        for (uint i = 0u; i < 2u * MAX_W; i++) acc[r][i] = 0.0;
    barrier();
    for (uint k0 = kbeg; k0 < kend; k0 += WG) {
        // scores of key k0 + tid against the R rows
        uint key = k0 + tid;
        float s[MAX_R];
        for (uint r = 0u; r < MAX_R; r++) s[r] = 0.0;
        if (key < kend) {
            key_row ka = key_of(key, kvh);
            // the row 16 bytes at a time (FLAG_VEC: rows, blocks and heads are), else word by word
            uint step = (pc.flags & FLAG_VEC) != 0u ? 4u : 1u;
            for (uint w0 = 0u; w0 < words; w0 += step) {
                uvec4 u4 = step == 4u ? key_load4(ka, w0) : uvec4(key_load(ka, w0), 0u, 0u, 0u);
                for (uint e = 0u; e < step; e++) {
                    uint u = u4[e], d = f32 ? w0 + e : 2u * (w0 + e);
                    vec2 kk = f32 ? vec2(uintBitsToFloat(u), 0.0) : unpackHalf2x16(u);
                    for (uint r = 0u; r < MAX_R; r++) {
                        if (r >= R) break;
                        s[r] += qs[r * pc.hd + d] * kk.x;
                        if (!f32) s[r] += qs[r * pc.hd + d + 1u] * kk.y;
                    }
                }
            }
        }
        for (uint r = 0u; r < MAX_R; r++) {
            if (r >= R) break;
            bool seen = key < kend && (!CAUSAL || key <= n_past + t0 + r / ng);
            sc[r][tid] = seen ? s[r] : -1.0 / 0.0;
        }
        barrier();
        // each row's tile max: 16 partial maxima, then the row's thread
        uint pr = tid / 16u, pcol = tid % 16u, per = WG / 16u;
        if (pr < R) {
            float mx = -1.0 / 0.0;
            for (uint j = pcol * per; j < (pcol + 1u) * per; j++) mx = max(mx, sc[pr][j]);
            part[pr][pcol] = mx;
        }
        barrier();
        if (tid < R) {
            float mx = m_s[tid];
            for (uint c = 0u; c < 16u; c++) mx = max(mx, part[tid][c]);
            a_s[tid] = exp_or0(m_s[tid], mx); // rescales what was summed under the old max
            m_s[tid] = mx;
        }
        barrier();
        for (uint r = 0u; r < MAX_R; r++) {
            if (r >= R) break;
            sc[r][tid] = exp_or0(sc[r][tid], m_s[r]);
        }
        barrier();
        if (pr < R) {
            float sum = 0.0;
            for (uint j = pcol * per; j < (pcol + 1u) * per; j++) sum += sc[pr][j];
            part[pr][pcol] = sum;
        }
        // probabilities times V for the words this thread owns
        for (uint r = 0u; r < MAX_R; r++) {
            if (r >= R) break;
            for (uint i = 0u; i < 2u * MAX_W; i++) acc[r][i] *= a_s[r];
        }
        uint nk = min(WG, kend - k0);
        for (uint j = 0u; j < nk; j++) {
            key_row va = val_of(k0 + j, kvh);
            for (uint wi = 0u; wi < MAX_W; wi++) {
                uint w = tid + wi * WG;
                if (w >= words) break;
                uint u = val_load(va, w);
                vec2 vv = f32 ? vec2(uintBitsToFloat(u), 0.0) : unpackHalf2x16(u);
                for (uint r = 0u; r < MAX_R; r++) {
                    if (r >= R) break;
                    float p = sc[r][j];
                    acc[r][2u * wi] += p * vv.x, acc[r][2u * wi + 1u] += p * vv.y;
                }
            }
        }
        barrier();
        if (tid < R) {
            float sum = 0.0;
            for (uint c = 0u; c < 16u; c++) sum += part[tid][c];
            l_s[tid] = l_s[tid] * a_s[tid] + sum;
        }
        barrier();
    }
    // out (one split) or the partial (m, l, acc) of this split
    for (uint r = 0u; r < R; r++) {
        uint t = t0 + r / ng, h = kvh * G + g0 + r % ng;
        for (uint wi = 0u; wi < MAX_W; wi++) {
            uint w = tid + wi * WG;
            if (w >= words) break;
            for (uint e = 0u; e < (f32 ? 1u : 2u); e++) {
                uint d = f32 ? w : 2u * w + e;
                float v = acc[r][2u * wi + e];
                if (pc.n_split == 1u) {
                    v = l_s[r] > 0.0 ? v / l_s[r] : 0.0;
                    if ((pc.flags & FLAG_GATE) != 0u) v *= 1.0 / (1.0 + exp(-gate[t * pc.gts + h * pc.ghs + d]));
                    o[t * pc.ots + h * pc.ohs + d] = v;
                } else {
                    scratch[((split * pc.n_tok + t) * pc.n_head + h) * (pc.hd + 2u) + 2u + d] = v;
                }
            }
        }
        if (pc.n_split > 1u && tid == 0u) {
            uint b = ((split * pc.n_tok + t) * pc.n_head + h) * (pc.hd + 2u);
            scratch[b] = m_s[r], scratch[b + 1u] = l_s[r];
        }
    }
}
