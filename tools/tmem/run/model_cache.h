/* model_cache.h: the random-weight Qwen3.5-0.8B-shaped GGUF the demo and
 * `tmem bench run` use, generated once by `tmem gen` and cached
 * ($TMEM_CACHE_DIR, else $XDG_CACHE_HOME/tmem, else ~/.cache/tmem). */
#ifndef TMEM_TOOL_MODEL_CACHE_H
#define TMEM_TOOL_MODEL_CACHE_H

#include <stdbool.h>
#include <stddef.h>

/* The cached model's path for a preset and dtype; false if no cache dir. */
bool tmem_model_cache_path(const char *preset, const char *dtype, char *buf, size_t cap);
/* The path, generating the model first (tmem gen, its progress bar on the
 * terminal) when it is not cached yet. false (and a message) on failure. */
bool tmem_model_cache_ensure(const char *preset, const char *dtype, char *buf, size_t cap);
/* The cached text model and its vision tower (`tmem gen --mmproj`: the
 * preset's tower, or a tiny one projecting to the text width), generated
 * together when the tower is not cached yet. false (and a message) on
 * failure. */
bool tmem_model_cache_ensure_vision(const char *preset, const char *dtype, char *text,
                                    size_t text_cap, char *mmproj, size_t mmproj_cap);
/* This executable's path (/proc/self/exe), to run subcommands in children. */
bool tmem_self_exe(char *buf, size_t cap);

#endif
