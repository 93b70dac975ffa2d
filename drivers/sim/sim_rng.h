/*
 * sim_rng.h - the simulator's own pseudo-random generator: xoshiro256**
 * seeded through splitmix64.
 *
 * Why not rand(): its sequence differs between C libraries and it is global
 * state, so the same --seed would give different clusters on different
 * machines.  These generators are fully specified (Blackman and Vigna), so a
 * seed gives the same bytes everywhere.  Streams are derived per purpose
 * (sim_rng_derive) so that, for example, adding a node type does not shift
 * the UUIDs of every node that follows it.
 */
#ifndef SIM_RNG_H
#define SIM_RNG_H

#include <stdint.h>

typedef struct sim_rng {
    uint64_t s[4];
} sim_rng;

static inline uint64_t sim_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline void sim_rng_seed(sim_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = sim_splitmix64(&x);
}

/* An independent stream for (seed, purpose, index). */
static inline void sim_rng_derive(sim_rng *r, uint64_t seed, uint64_t purpose, uint64_t index)
{
    uint64_t x = seed ^ (purpose * 0xd1b54a32d192ed03ULL);
    uint64_t a = sim_splitmix64(&x);
    x = a ^ (index * 0x8cb92ba72f3d8dd7ULL);
    sim_rng_seed(r, sim_splitmix64(&x));
}

static inline uint64_t sim_rng_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t sim_rng_next(sim_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = sim_rng_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = sim_rng_rotl(s[3], 45);
    return result;
}

/* Uniform in [0, n) without modulo bias (Lemire's method); n > 0. */
static inline uint64_t sim_rng_below(sim_rng *r, uint64_t n)
{
    unsigned __int128 m = (unsigned __int128)sim_rng_next(r) * n;
    uint64_t lo = (uint64_t)m;
    if (lo < n) {
        uint64_t t = -n % n;
        while (lo < t) {
            m = (unsigned __int128)sim_rng_next(r) * n;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

/* Uniform double in [0, 1) from the top 53 bits. */
static inline double sim_rng_unit(sim_rng *r)
{
    return (double)(sim_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
