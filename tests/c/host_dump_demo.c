/*
 * host_dump_demo: kernels/device/moetrace_host.h on its own (no SHMEM).
 *
 *   host_dump_demo dump OUT       rings of 2 cores (core 1 wraps) written with moetrace_dump_rings
 *                                 to OUT/rank0.mtr; prints each ring's write count, one per line
 *   host_dump_demo hang OUT       records, then waits forever: the watchdog (0.3 s) dumps
 *                                 OUT/rank0.mtr, on_hang writes OUT/hung, the process exits 3
 *   host_dump_demo finished OUT   records, dumps, tells the watchdog it finished, then waits
 *                                 forever: the watchdog ends the process with status 0
 *
 * Every mode writes OUT/manifest.json. Compiles as C99 (with _POSIX_C_SOURCE) and as C++.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernels/device/moetrace_host.h"

#define CAP 16u
#define CORES 2u

static char out_dir[2048];

static void write_file(const char *name, const char *text)
{
    char path[4096];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", out_dir, name);
    f = fopen(path, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
        exit(2);
    }
}

static void on_hang(void *arg)
{
    write_file("hung", (const char *)arg);
}

int main(int argc, char **argv)
{
    static uint8_t rings[CORES * MOETRACE_RING_BYTES(CAP)];
    static moetrace_watchdog_t wd;
    char dump[4096];
    const uint32_t events[CORES] = {10, 40}; /* core 1 wraps its 16-record ring */
    uint32_t core, i;
    if (argc != 3) {
        return 2;
    }
    snprintf(out_dir, sizeof out_dir, "%s", argv[2]);
    snprintf(dump, sizeof dump, "%s/rank0.mtr", out_dir);
    write_file("manifest.json",
               "{\"format\": \"moetrace-trace/1\", \"ranks\": 1, \"cores\": 2, \"regions\": "
               "[{\"name\": \"flag\", \"role\": \"flag\", \"elem_bytes\": 4, \"length\": 64}]}\n");
    for (core = 0; core < CORES; ++core) {
        moetrace_ring_init(moetrace_ring_at(rings, CAP, core), CAP, 0, core);
    }
    if (strcmp(argv[1], "dump") != 0) {
        if (moetrace_watchdog_arm(&wd, rings, CAP, CORES, 0.3, dump, on_hang, (void *)"no progress\n") != 0) {
            return 2;
        }
    }
    for (core = 0; core < CORES; ++core) {
        moetrace_t t = moetrace_open(moetrace_ring_at(rings, CAP, core), 0, MOETRACE_NONE);
        for (i = 0; i + 1 < events[core]; ++i) {
            moetrace_write(&t, MOETRACE_NONE, 0, (int64_t)i, 4, (int64_t)i);
        }
        moetrace_wait_begin(&t, MOETRACE_NONE, 0, 63, MOETRACE_CMP_EQ, 1, MOETRACE_NONE); /* never ends */
    }
    if (strcmp(argv[1], "dump") == 0) {
        if (moetrace_dump_rings(dump, rings, CAP, CORES) != 0) {
            return 2;
        }
        for (core = 0; core < CORES; ++core) {
            printf("%u\n", (unsigned)moetrace_write_count(moetrace_ring_at(rings, CAP, core)));
        }
        return 0;
    }
    if (strcmp(argv[1], "finished") == 0) {
        if (moetrace_dump_rings(dump, rings, CAP, CORES) != 0) {
            return 2;
        }
        moetrace_watchdog_finished(&wd);
    }
    for (;;) {
        struct timespec nap = {1, 0};
        nanosleep(&nap, NULL); /* the stuck kernel: the watchdog ends the process */
    }
}
