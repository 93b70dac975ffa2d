/*
 * cost.c - static worst-case cost estimate (placeholder until the full
 * estimator lands): returns 0.
 */
#include "cel_int.h"

uint64_t cel_estimate(cel_env *env, const cel_prog *p)
{
    (void)env;
    (void)p;
    return 0;
}
