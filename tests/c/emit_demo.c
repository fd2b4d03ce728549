/*
 * emit_demo: record events of every kind through moetrace.h on the host, as
 * a kernel would on the device, dump the rings and log every emitted event.
 *
 *   emit_demo OUT_DIR LOG_FILE   writes OUT_DIR/manifest.json, OUT_DIR/rank0.mtr
 *                                (written prefix of each ring), OUT_DIR/rank1.mtr
 *                                (raw copy of the whole ring buffer; core 2 wraps)
 *                                and LOG_FILE: one JSON line per emitted event in
 *                                the JSON-lines trace format
 *   emit_demo --layout           prints the header's offsets and codes as JSON
 *
 * Compiles as C99 and as C++.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t demo_now = 1000;
static uint64_t demo_rand_state = 0x9E3779B97F4A7C15ull;

static uint64_t demo_rand(void)
{
    demo_rand_state = demo_rand_state * 6364136223846793005ull + 1442695040888963407ull;
    return demo_rand_state >> 17;
}

static uint64_t demo_clock(void)
{
    demo_now += 1 + demo_rand() % 50;
    return demo_now;
}

#define MOETRACE_CLOCK() demo_clock()
#include "../../kernels/device/moetrace.h"

#define RANKS 2
#define CORES 3
#define CAP0 256u /* rank 0: no ring wraps */
#define CAP1 32u  /* rank 1: core 2 wraps */

static const char *const KINDS[] = {"kernel_begin", "kernel_end", "put", "get", "put_signal", "signal", "amo",
                                    "quiet", "fence", "wait_begin", "wait_end", "write", "pipe_sync",
                                    "atomic_mode", "barrier_begin", "barrier_end", "route", "count", "deliver"};
static const char *const ENGINES[] = {"mte", "sdma", "udma", "roce", "local", "all", "p2p", "ibgda"};
static const char *const OPS[] = {"set", "add", "none"};
static const char *const CMPS[] = {"eq", "ne", "gt", "ge", "lt", "le"};
static const char *const OUTCOMES[] = {"ok", "timeout"};
static const char *const SCOPES[] = {"all", "core", "team"};
static const char *const PIPE_OPS[] = {"set_flag", "wait_flag", "pipe_barrier", "cross_core_set",
                                       "cross_core_wait", "sync_all"};
static const char *const EVENTS[] = {"mte3_s", "s_mte3", "mte3_mte2", "mte2_mte3", "mte2_s", "s_mte2", "mte3", "all"};
static const char *const DTYPES[] = {"int8", "int16", "int32", "int64", "uint32", "uint64", "half", "bfloat16",
                                     "float"};
static const char *const REGIONS[] = {"payload", "ready", "count", "status"};
static const char *const NAMES[] = {"dispatch", "combine"};

static FILE *log_file;

/* Envelope of the event just emitted: its seq is write_count - 1. */
static void log_begin(const moetrace_t *t, unsigned kind, int64_t site)
{
    fprintf(log_file, "{\"rank\": %u, \"core\": %u, \"seq\": %" PRIu64 ", \"ts\": %" PRIu64
                  ", \"launch\": %d, \"kind\": \"%s\"",
            (unsigned)t->ring->rank, (unsigned)t->ring->core, t->ring->write_count - 1u, demo_now, (int)t->launch,
            KINDS[kind]);
    if (site != MOETRACE_NONE) {
        fprintf(log_file, ", \"site\": %" PRId64, site);
    }
    if (t->epoch != MOETRACE_NONE) {
        fprintf(log_file, ", \"epoch\": %" PRId64, t->epoch);
    }
}

static void log_int(const char *key, int64_t v)
{
    if (v != MOETRACE_NONE) {
        fprintf(log_file, ", \"%s\": %" PRId64, key, v);
    }
}

static void log_str(const char *key, const char *v)
{
    fprintf(log_file, ", \"%s\": \"%s\"", key, v);
}

static void log_end(void)
{
    fputs("}\n", log_file);
}

static int64_t opt(int64_t v)
{
    return demo_rand() % 3 == 0 ? MOETRACE_NONE : v;
}

static int64_t site_of(void)
{
    return demo_rand() % 4 == 0 ? MOETRACE_NONE : (int64_t)(demo_rand() % 100);
}

static int64_t rnd(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(demo_rand() % (uint64_t)(hi - lo + 1));
}

/* One round of every kind, with optional fields present or absent at random. */
static void emit_round(const moetrace_t *t)
{
    int64_t site, a, b, c, d, e, f;
    unsigned eng = (unsigned)rnd(0, 4), op = (unsigned)rnd(0, 1), reg = (unsigned)rnd(0, 3);

    site = site_of(); a = rnd(0, 1);
    moetrace_kernel_begin(t, site, (int32_t)a);
    log_begin(t, MOETRACE_KIND_KERNEL_BEGIN, site); log_str("name", NAMES[a]); log_end();

    site = site_of(); a = rnd(0, 1); b = rnd(0, 1 << 20); c = rnd(1, 1 << 16); d = opt(rnd(-5, 1ll << 40));
    moetrace_put(t, site, eng, (int)a, reg, b, (int32_t)c, d);
    log_begin(t, MOETRACE_KIND_PUT, site); log_str("engine", ENGINES[eng]); log_int("peer", a);
    log_str("region", REGIONS[reg]); log_int("offset", b); log_int("nbytes", c); log_int("value", d); log_end();

    site = site_of(); a = rnd(0, 1); b = rnd(0, 4096); c = rnd(1, 4096); d = rnd(0, 3); e = rnd(0, 99999);
    moetrace_get(t, site, eng, (int)a, reg, b, (int32_t)c, (unsigned)d, e);
    log_begin(t, MOETRACE_KIND_GET, site); log_str("engine", ENGINES[eng]); log_int("peer", a);
    log_str("region", REGIONS[reg]); log_int("offset", b); log_int("nbytes", c);
    log_str("local_region", REGIONS[d]); log_int("local_offset", e); log_end();

    site = site_of(); a = rnd(0, 1); b = rnd(0, 1 << 30); c = rnd(1, 1 << 20); d = rnd(0, 3); e = rnd(0, 65535);
    f = rnd(-(1ll << 50), 1ll << 50);
    moetrace_put_signal(t, site, eng, (int)a, reg, b, (int32_t)c, (unsigned)d, (int32_t)e, op, f);
    log_begin(t, MOETRACE_KIND_PUT_SIGNAL, site); log_str("engine", ENGINES[eng]); log_int("peer", a);
    log_str("region", REGIONS[reg]); log_int("offset", b); log_int("nbytes", c); log_str("sig_region", REGIONS[d]);
    log_int("sig_offset", e); log_str("op", OPS[op]); log_int("value", f); log_end();

    site = site_of(); a = rnd(0, 1); b = rnd(0, 255); c = rnd(-3, 3);
    moetrace_signal(t, site, eng, (int)a, 1, b, op, c);
    log_begin(t, MOETRACE_KIND_SIGNAL, site); log_str("engine", ENGINES[eng]); log_int("peer", a);
    log_str("region", REGIONS[1]); log_int("offset", b); log_str("op", OPS[op]); log_int("value", c); log_end();

    site = site_of(); a = rnd(0, 1); b = rnd(0, 255); c = rnd(0, 1000);
    moetrace_amo(t, site, eng, (int)a, 2, b, op, c);
    log_begin(t, MOETRACE_KIND_AMO, site); log_str("engine", ENGINES[eng]); log_int("peer", a);
    log_str("region", REGIONS[2]); log_int("offset", b); log_str("op", OPS[op]); log_int("value", c); log_end();

    site = site_of(); a = rnd(0, 1); b = rnd(0, 255); c = rnd(0, 1000); d = opt(rnd(0, 8));
    moetrace_amo_dtype(t, site, eng, (int)a, 2, b, op, c, d);
    log_begin(t, MOETRACE_KIND_AMO, site); log_str("engine", ENGINES[eng]); log_int("peer", a);
    log_str("region", REGIONS[2]); log_int("offset", b); log_str("op", OPS[op]); log_int("value", c);
    if (d != MOETRACE_NONE) { log_str("dtype", DTYPES[d]); }
    log_end();

    site = site_of(); a = rnd(0, 1); b = rnd(0, 1 << 20); c = rnd(1, 1 << 16); d = opt(rnd(-5, 1ll << 40));
    e = rnd(0, 3); f = rnd(0, 1 << 30);
    moetrace_put_from(t, site, eng, (int)a, reg, b, (int32_t)c, d, (unsigned)e, (int32_t)f);
    log_begin(t, MOETRACE_KIND_PUT, site); log_str("engine", ENGINES[eng]); log_int("peer", a);
    log_str("region", REGIONS[reg]); log_int("offset", b); log_int("nbytes", c); log_int("value", d);
    log_str("local_region", REGIONS[e]); log_int("local_offset", f); log_end();

    site = site_of(); a = rnd(0, 5); b = opt(rnd(0, 1));
    moetrace_quiet(t, site, (unsigned)a, b);
    log_begin(t, MOETRACE_KIND_QUIET, site); log_str("engine", ENGINES[a]); log_int("peer", b); log_end();

    site = site_of(); a = opt(rnd(0, 5)); b = opt(rnd(0, 1));
    moetrace_fence(t, site, a, b);
    log_begin(t, MOETRACE_KIND_FENCE, site);
    if (a != MOETRACE_NONE) { log_str("engine", ENGINES[a]); }
    log_int("peer", b); log_end();

    site = site_of(); a = rnd(0, 255); b = rnd(0, 5); c = rnd(0, 9); d = opt(rnd(1, 8));
    moetrace_wait_begin(t, site, 1, a, (unsigned)b, c, d);
    log_begin(t, MOETRACE_KIND_WAIT_BEGIN, site); log_str("region", REGIONS[1]); log_int("offset", a);
    log_str("cmp", CMPS[b]); log_int("value", c); log_int("words", d); log_end();

    site = site_of(); b = rnd(0, 9); c = opt(rnd(0, 1));
    moetrace_wait_end(t, site, 1, a, b, c);
    log_begin(t, MOETRACE_KIND_WAIT_END, site); log_str("region", REGIONS[1]); log_int("offset", a);
    log_int("observed", b);
    if (c != MOETRACE_NONE) { log_str("outcome", OUTCOMES[c]); }
    log_end();

    site = site_of(); a = rnd(0, 255); b = rnd(4, 32); c = rnd(0, 1);
    moetrace_write(t, site, 3, a, (int32_t)b, c);
    log_begin(t, MOETRACE_KIND_WRITE, site); log_str("region", REGIONS[3]); log_int("offset", a);
    log_int("nbytes", b); log_int("value", c); log_end();

    site = site_of(); a = rnd(0, 5); b = rnd(0, 7);
    moetrace_pipe_sync(t, site, (unsigned)a, (unsigned)b);
    log_begin(t, MOETRACE_KIND_PIPE_SYNC, site); log_str("op", PIPE_OPS[a]); log_str("event", EVENTS[b]); log_end();

    site = site_of(); a = rnd(1, 2); b = opt(rnd(0, 8));
    moetrace_atomic_mode(t, site, (unsigned)a, b);
    log_begin(t, MOETRACE_KIND_ATOMIC_MODE, site); log_str("op", OPS[a]);
    if (b != MOETRACE_NONE) { log_str("dtype", DTYPES[b]); }
    log_end();

    site = site_of(); a = rnd(0, 2); b = opt(rnd(0, 100));
    moetrace_barrier_begin(t, site, (unsigned)a, b);
    log_begin(t, MOETRACE_KIND_BARRIER_BEGIN, site); log_str("scope", SCOPES[a]); log_int("value", b); log_end();
    moetrace_barrier_end(t, site, (unsigned)a, b);
    log_begin(t, MOETRACE_KIND_BARRIER_END, site); log_str("scope", SCOPES[a]); log_int("value", b); log_end();

    site = site_of(); a = rnd(0, 127); b = rnd(0, 7); c = rnd(-1, 300); d = opt(rnd(0, 1)); e = opt(rnd(0, 1023));
    moetrace_route(t, site, (int32_t)a, (int)b, (int32_t)c, d, e);
    log_begin(t, MOETRACE_KIND_ROUTE, site); log_int("token", a); log_int("topk", b); log_int("expert", c);
    log_int("dst_rank", d); log_int("slot", e); log_end();

    site = site_of(); a = rnd(0, 1); b = rnd(0, 3); c = rnd(0, 500); d = opt(rnd(1, 256));
    moetrace_count(t, site, (int)a, (int32_t)b, c, d);
    log_begin(t, MOETRACE_KIND_COUNT, site); log_int("peer", a); log_int("local_expert", b); log_int("value", c);
    log_int("capacity", d); log_end();

    site = site_of(); a = rnd(0, 3); b = rnd(0, 1); c = rnd(0, 500); d = rnd(0, 256);
    moetrace_deliver(t, site, (int32_t)a, (int)b, (int32_t)c, (int32_t)(c < d ? c : d), (int32_t)d);
    log_begin(t, MOETRACE_KIND_DELIVER, site); log_int("local_expert", a); log_int("src_rank", b);
    log_int("requested", c); log_int("delivered", c < d ? c : d); log_int("capacity", d); log_end();

    site = site_of();
    moetrace_kernel_end(t, site, 0);
    log_begin(t, MOETRACE_KIND_KERNEL_END, site); log_str("name", NAMES[0]); log_end();
}

static int write_manifest(const char *dir)
{
    char path[4096];
    FILE *f;
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    f = fopen(path, "w");
    if (!f) {
        return 1;
    }
    fprintf(f, "{\"format\": \"moetrace-trace/1\", \"ranks\": %d, \"cores\": %d, \"protocol\": \"demo\",\n"
               " \"regions\": [\n"
               "  {\"name\": \"payload\", \"role\": \"payload\", \"elem_bytes\": 2, \"length\": 1073741824},\n"
               "  {\"name\": \"ready\", \"role\": \"flag\", \"elem_bytes\": 4, \"length\": 4096, \"reset\": 0},\n"
               "  {\"name\": \"count\", \"role\": \"counter\", \"elem_bytes\": 4, \"length\": 4096},\n"
               "  {\"name\": \"status\", \"role\": \"flag\", \"elem_bytes\": 4, \"length\": 4096}],\n"
               " \"names\": [\"dispatch\", \"combine\"]}\n",
            RANKS, CORES);
    return fclose(f) != 0;
}

static int dump(const char *dir, unsigned rank, unsigned char *buf, uint32_t cap, int prefix_only)
{
    char path[4096];
    FILE *f;
    unsigned c;
    int bad = 0;
    snprintf(path, sizeof path, "%s/rank%u.mtr", dir, rank);
    f = fopen(path, "wb");
    if (!f) {
        return 1;
    }
    if (!prefix_only) { /* the raw ring buffer, as copied off the device */
        bad |= fwrite(buf, 1, (size_t)MOETRACE_RING_BYTES(cap) * CORES, f) != (size_t)MOETRACE_RING_BYTES(cap) * CORES;
    } else { /* only what was written: the host rewrites `stored` */
        for (c = 0; c < CORES; ++c) {
            moetrace_ring_header_t *h = moetrace_ring_at(buf, cap, c);
            uint32_t n = h->write_count < h->capacity ? (uint32_t)h->write_count : h->capacity;
            h->stored = n;
            bad |= fwrite(h, 1, (size_t)MOETRACE_RING_BYTES(n), f) != (size_t)MOETRACE_RING_BYTES(n);
        }
    }
    return fclose(f) != 0 || bad;
}

#define OFF(type, field) printf("\"%s\": %u, ", #field, (unsigned)offsetof(type, field))

static void layout(void)
{
    printf("{\"header\": {");
    OFF(moetrace_ring_header_t, magic); OFF(moetrace_ring_header_t, version);
    OFF(moetrace_ring_header_t, record_size); OFF(moetrace_ring_header_t, header_size);
    OFF(moetrace_ring_header_t, capacity); OFF(moetrace_ring_header_t, write_count);
    OFF(moetrace_ring_header_t, rank); OFF(moetrace_ring_header_t, core); OFF(moetrace_ring_header_t, stored);
    OFF(moetrace_ring_header_t, reserved);
    printf("\"size\": %u}, \"record\": {", (unsigned)sizeof(moetrace_ring_header_t));
    OFF(moetrace_record_t, ts); OFF(moetrace_record_t, seq_lo); OFF(moetrace_record_t, launch);
    OFF(moetrace_record_t, kind); OFF(moetrace_record_t, e0); OFF(moetrace_record_t, e1);
    OFF(moetrace_record_t, e2); OFF(moetrace_record_t, present); OFF(moetrace_record_t, h);
    OFF(moetrace_record_t, r0); OFF(moetrace_record_t, r1); OFF(moetrace_record_t, site);
    OFF(moetrace_record_t, u); OFF(moetrace_record_t, v); OFF(moetrace_record_t, x);
    OFF(moetrace_record_t, y); OFF(moetrace_record_t, epoch);
    printf("\"size\": %u}, \"version\": %d, \"kinds\": {", (unsigned)sizeof(moetrace_record_t), MOETRACE_VERSION);
    {
        unsigned k;
        for (k = 0; k < sizeof KINDS / sizeof KINDS[0]; ++k) {
            printf("%s\"%s\": %u", k ? ", " : "", KINDS[k], k);
        }
    }
    printf("}, \"codes\": {\"kind.deliver\": %d, \"engine.all\": %d, \"op.none\": %d, \"cmp.le\": %d, "
           "\"outcome.timeout\": %d, \"scope.team\": %d, \"pipe_op.sync_all\": %d, \"event.all\": %d, "
           "\"dtype.float\": %d}}\n",
           MOETRACE_KIND_DELIVER, MOETRACE_ENGINE_ALL, MOETRACE_OP_NONE, MOETRACE_CMP_LE, MOETRACE_OUTCOME_TIMEOUT,
           MOETRACE_SCOPE_TEAM, MOETRACE_PIPE_OP_SYNC_ALL, MOETRACE_EVENT_ALL, MOETRACE_DTYPE_FLOAT);
}

int main(int argc, char **argv)
{
    static const int rounds[RANKS][CORES] = {{3, 1, 5}, {1, 0, 7}}; /* rank 1 core 2 wraps its 32-record ring */
    unsigned char *bufs[RANKS];
    const uint32_t caps[RANKS] = {CAP0, CAP1};
    unsigned r, c;
    int i;
    if (argc == 2 && strcmp(argv[1], "--layout") == 0) {
        layout();
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: emit_demo OUT_DIR LOG_FILE | --layout\n");
        return 2;
    }
    log_file = fopen(argv[2], "w");
    if (!log_file || write_manifest(argv[1])) {
        perror("emit_demo");
        return 1;
    }
    for (r = 0; r < RANKS; ++r) {
        /* Garbage in unwritten slots: the reader must look only at written ones. */
        bufs[r] = (unsigned char *)malloc((size_t)MOETRACE_RING_BYTES(caps[r]) * CORES);
        memset(bufs[r], 0xA5, (size_t)MOETRACE_RING_BYTES(caps[r]) * CORES);
        for (c = 0; c < CORES; ++c) {
            moetrace_ring_init(moetrace_ring_at(bufs[r], caps[r], c), caps[r], r, c);
        }
    }
    /* Interleave cores as concurrent hardware would; each core keeps its own order. */
    for (i = 0; i < 8; ++i) {
        for (r = 0; r < RANKS; ++r) {
            for (c = 0; c < CORES; ++c) {
                if (i < rounds[r][c]) {
                    moetrace_t t = moetrace_open(moetrace_ring_at(bufs[r], caps[r], c), i,
                                                 (i + (int)c) % 2 ? (int64_t)(0x5EED0000 + i) : MOETRACE_NONE);
                    emit_round(&t);
                }
            }
        }
    }
    if (dump(argv[1], 0, bufs[0], caps[0], 1) || dump(argv[1], 1, bufs[1], caps[1], 0)) {
        perror("emit_demo");
        return 1;
    }
    for (r = 0; r < RANKS; ++r) {
        free(bufs[r]);
    }
    return fclose(log_file) != 0;
}
