// vis_pos.glsl: the grid position (row, col) of vision token t of a
// grid_w-wide grid in merge order (merge x merge blocks, row-major inside a
// block, blocks row-major): vision/ops.c tmrt__vis_token_pos.
uvec2 vis_token_pos(uint t, uint grid_w, uint merge) {
    uint m2 = merge * merge, blk = t / m2, in_blk = t % m2, across = grid_w / merge;
    return uvec2((blk / across) * merge + in_blk / merge, (blk % across) * merge + in_blk % merge);
}
