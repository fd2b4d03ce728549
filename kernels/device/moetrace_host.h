/*
 * moetrace_host.h - the host side of moetrace.h: dump a rank's rings to a
 * `.mtr` file, and a watchdog that takes that dump when the kernel hangs.
 *
 * Host C / C++ only (stdio, POSIX threads, rename). The rings are the buffer
 * the kernel records into (moetrace_ring_at layout, CAP records each), in host
 * memory or copied from the device:
 *
 *     moetrace_dump_rings("out/rank3.mtr", rings, CAP, cores);   // after the kernel, or on error
 *
 *     static moetrace_watchdog_t wd;                               // a hang: dump, mark, exit
 *     moetrace_watchdog_arm(&wd, rings, CAP, cores, 3.0, "out/rank3.mtr", on_hang, ctx);
 *     ... launches ...
 *     moetrace_dump_rings(...); moetrace_watchdog_finished(&wd);
 *
 * The watchdog thread sums the rings' write counters every 50 ms; when the sum
 * has not moved for `timeout_s` it writes the dump, calls `on_hang(arg)` (write
 * a marker, print the place) and ends the process with _exit(MOETRACE_HANG_EXIT).
 * Once the host called moetrace_watchdog_finished (its final dump is taken),
 * no progress only ends the process with _exit(0): a rank that completed and
 * waits at a final barrier for a hung peer must not hang the job.
 *
 * For device rings (CUDA, AscendC) the watchdog cannot read device memory:
 * there, copy the ring buffer to the host on a timeout of the host's own wait
 * (the stream or event), then call moetrace_dump_rings on the copy.
 */
#ifndef MOETRACE_HOST_H
#define MOETRACE_HOST_H

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "moetrace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MOETRACE_HANG_EXIT 3 /* exit status of a process the watchdog ended on a hang */

/* A ring's write counter, read while its core may still be emitting. */
static inline uint64_t moetrace_write_count(const moetrace_ring_header_t *ring)
{
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_load_n(&ring->write_count, __ATOMIC_ACQUIRE);
#else
    return *(const volatile uint64_t *)&ring->write_count;
#endif
}

/*
 * Write rings 0..nrings-1 of `base` (moetrace_ring_at layout) to `path`: each
 * ring's header with stored = min(write_count, capacity), followed by its
 * first `stored` slots (all of them once the ring wrapped), as
 * docs/trace-format.md describes. Written to `path`.tmp and renamed, so a
 * reader never sees half a dump. Returns 0, or -1 with errno set.
 */
static inline int moetrace_dump_rings(const char *path, const void *base, uint32_t capacity, uint32_t nrings)
{
    char tmp[4096];
    FILE *f;
    uint32_t k;
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    f = fopen(tmp, "wb");
    if (f == NULL) {
        return -1;
    }
    for (k = 0; k < nrings; ++k) {
        const moetrace_ring_header_t *ring = moetrace_ring_at((void *)base, capacity, k);
        moetrace_ring_header_t hdr = *ring;
        uint64_t w = moetrace_write_count(ring);
        hdr.write_count = w;
        hdr.stored = w < capacity ? (uint32_t)w : capacity;
        if (fwrite(&hdr, sizeof hdr, 1, f) != 1 ||
            (hdr.stored && fwrite((const uint8_t *)ring + MOETRACE_HEADER_SIZE, MOETRACE_RECORD_SIZE, hdr.stored,
                                  f) != hdr.stored)) {
            fclose(f);
            remove(tmp);
            return -1;
        }
    }
    if (fclose(f) != 0) {
        remove(tmp);
        return -1;
    }
    return rename(tmp, path);
}

typedef struct moetrace_watchdog {
    const void *rings;
    uint32_t capacity, nrings;
    double timeout_s;
    char path[4096];
    void (*on_hang)(void *arg);
    void *arg;
    volatile int finished;
    pthread_t thread;
} moetrace_watchdog_t;

static inline uint64_t moetrace__progress(const moetrace_watchdog_t *w)
{
    uint64_t sum = 0;
    uint32_t k;
    for (k = 0; k < w->nrings; ++k) {
        sum += moetrace_write_count(moetrace_ring_at((void *)w->rings, w->capacity, k));
    }
    return sum;
}

static inline double moetrace__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline void *moetrace__watch(void *p)
{
    moetrace_watchdog_t *w = (moetrace_watchdog_t *)p;
    uint64_t last = moetrace__progress(w);
    double since = moetrace__now();
    struct timespec tick = {0, 50 * 1000 * 1000};
    for (;;) {
        uint64_t now;
        nanosleep(&tick, NULL);
        now = moetrace__progress(w);
        if (now != last) {
            last = now;
            since = moetrace__now();
        } else if (moetrace__now() - since >= w->timeout_s) {
            if (w->finished) {
                _exit(0);
            }
            if (moetrace_dump_rings(w->path, w->rings, w->capacity, w->nrings) != 0) {
                fprintf(stderr, "moetrace watchdog: cannot write %s: %s\n", w->path, strerror(errno));
            }
            if (w->on_hang) {
                w->on_hang(w->arg);
            }
            _exit(MOETRACE_HANG_EXIT);
        }
    }
    return NULL;
}

/* Start the watchdog thread (detached). `w` must outlive it: make it static. Returns 0 or an errno. */
static inline int moetrace_watchdog_arm(moetrace_watchdog_t *w, const void *rings, uint32_t capacity,
                                        uint32_t nrings, double timeout_s, const char *dump_path,
                                        void (*on_hang)(void *), void *arg)
{
    int rc;
    w->rings = rings;
    w->capacity = capacity;
    w->nrings = nrings;
    w->timeout_s = timeout_s;
    w->on_hang = on_hang;
    w->arg = arg;
    w->finished = 0;
    if (snprintf(w->path, sizeof w->path, "%s", dump_path) >= (int)sizeof w->path) {
        return ENAMETOOLONG;
    }
    rc = pthread_create(&w->thread, NULL, moetrace__watch, w);
    return rc ? rc : pthread_detach(w->thread);
}

/* The host took its final dump: from now on no progress ends the process with status 0. */
static inline void moetrace_watchdog_finished(moetrace_watchdog_t *w)
{
    w->finished = 1;
}

#ifdef __cplusplus
}
#endif

#endif /* MOETRACE_HOST_H */
