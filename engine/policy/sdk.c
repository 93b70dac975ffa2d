/*
 * sdk.c - the Lua policy SDK (lua/draengine/<module>.lua), embedded in the binary
 * at build time so that `draengine` works from the build tree, after
 * `make`, and wherever the binary is copied.  Policies reach these modules
 * only through the sandbox's require (sandbox.c), which never opens files.
 *
 * The sources are pulled in with the assembler's .incbin, relative to the
 * directory the compiler runs in (the repository root, as the Makefile
 * does); the Makefile lists lua/draengine/<module>.lua as prerequisites of this
 * object so an edited module is re-embedded.
 */
#include "pol_int.h"

#include <string.h>

#define POL_INCBIN(sym, file)                                                     \
    __asm__(".section .rodata\n"                                                  \
            ".global pol_sdk_" #sym "_start\n"                                    \
            ".hidden pol_sdk_" #sym "_start\n"                                    \
            ".balign 16\n"                                                        \
            "pol_sdk_" #sym "_start:\n"                                           \
            ".incbin \"" file "\"\n"                                              \
            ".global pol_sdk_" #sym "_end\n"                                      \
            ".hidden pol_sdk_" #sym "_end\n"                                      \
            "pol_sdk_" #sym "_end:\n"                                             \
            ".byte 0\n"                                                           \
            ".previous\n");                                                       \
    extern const char pol_sdk_##sym##_start[] __attribute__((visibility("hidden"))); \
    extern const char pol_sdk_##sym##_end[] __attribute__((visibility("hidden")))

POL_INCBIN(policy, "lua/draengine/policy.lua");
POL_INCBIN(vendors, "lua/draengine/vendors.lua");
POL_INCBIN(test, "lua/draengine/test.lua");

static pol_sdk_module modules[3];
static bool ready;

static void init(void)
{
    if (ready)
        return;
    modules[0] = (pol_sdk_module){"draengine.policy", "lua/draengine/policy.lua", pol_sdk_policy_start,
                                  (size_t)(pol_sdk_policy_end - pol_sdk_policy_start), false};
    modules[1] = (pol_sdk_module){"draengine.vendors", "lua/draengine/vendors.lua", pol_sdk_vendors_start,
                                  (size_t)(pol_sdk_vendors_end - pol_sdk_vendors_start), false};
    modules[2] = (pol_sdk_module){"draengine.test", "lua/draengine/test.lua", pol_sdk_test_start,
                                  (size_t)(pol_sdk_test_end - pol_sdk_test_start), true};
    ready = true;
}

const pol_sdk_module *pol_sdk_find(const char *name)
{
    init();
    for (size_t i = 0; i < DE_ARRAY_LEN(modules); i++)
        if (!strcmp(modules[i].name, name))
            return &modules[i];
    return NULL;
}

const pol_sdk_module *pol_sdk_list(size_t *n)
{
    init();
    *n = DE_ARRAY_LEN(modules);
    return modules;
}
