/* Under LeakSanitizer (ASan builds of the tool): the one-time allocations
 * of the libraries beneath a Vulkan driver (Mesa's lavapipe pulls LLVM, ICU,
 * libxml2), which `tmem info` loads to list GPU backends, are the driver's,
 * not typedmem's. The typedmem_gpu backend keeps those libraries mapped, so
 * they can be named here. Only LeakSanitizer calls this. */
const char *__lsan_default_suppressions(void);
__attribute__((visibility("default"), used)) const char *__lsan_default_suppressions(void) {
    return "leak:libxml2.so\nleak:libicuuc.so\nleak:libLLVM\n";
}
