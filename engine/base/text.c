/*
 * text.c - the program's machine code mapped before it is needed.
 *
 * The kernel maps an executable's code pages lazily: the first call of a
 * function whose page nothing has run yet takes a page fault (fault-around
 * maps a few neighbours, so which call faults depends on the layout and on
 * the page cache).  The allocator's rarely taken paths - a device with
 * capacity, a constraint kind the first pods did not use - first run deep
 * into a stream of decisions, and that was the stray fault in about one
 * benchmark run of five, on a code page (al_capacity_fits, a libgcc helper),
 * not on data; in another run a libm page (ceil, first used by a CEL
 * expression).  Reading one byte of each page of every loaded object's
 * executable segments maps them (a read fault installs the page with the
 * mapping's protections, so running it later does not fault).  These are
 * shared page-cache pages: they count in the resident set (about 10 MiB
 * for the program and its libraries) but take no memory of their own.
 * Done once per process,
 * off the decision path (al_prepare).
 */
#include "de.h"

#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

static int map_object(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    (void)ctx;
    long psz = sysconf(_SC_PAGESIZE);
    if (psz <= 0)
        psz = 4096;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t lo = (uintptr_t)(info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)(psz - 1);
        uintptr_t hi = (uintptr_t)(info->dlpi_addr + ph->p_vaddr + ph->p_memsz);
        for (uintptr_t p = lo; p < hi; p += (uintptr_t)psz) {
            (void)*(volatile const unsigned char *)p;
        }
    }
    return 0;
}

void de_map_text(void)
{
    static bool done;
    if (!done) {
        done = true;
        dl_iterate_phdr(map_object, NULL);
    }
}
