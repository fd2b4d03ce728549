/*
 * moetrace.h - record one-sided communication events into per-core rings.
 *
 * One header for AscendC (__gm__ pointers, __aicore__ functions), CUDA
 * (__device__ functions) and plain C / C++ on the host (tests, simulators).
 * Each core (AIV core / CUDA block) owns one ring in device memory: a 64-byte
 * header and `capacity` 64-byte records. Record i (the i-th event the core
 * ever emitted, i = its seq) goes to slot i % capacity; the header's
 * write_count says how many were ever written, so the host knows exactly how
 * many the ring overwrote. Rings of all cores laid out back to back
 * (moetrace_ring_at) form a valid dump file: copy the buffer to the host and
 * write it to a `.mtr` file as is. The byte layout is documented in
 * docs/trace-format.md and mirrored by ingest/ring_layout.py.
 *
 *     moetrace_ring_init(moetrace_ring_at(buf, CAP, core), CAP, rank, core);  // once
 *     moetrace_t t = moetrace_open(moetrace_ring_at(buf, CAP, core), launch, MOETRACE_NONE);
 *     moetrace_put(&t, SITE_PAYLOAD, MOETRACE_ENGINE_MTE, peer, REGION_X, off, nbytes, MOETRACE_NONE);
 *
 * Optional arguments (and the tracer's epoch, and every `site`) take
 * MOETRACE_NONE for "absent". Region arguments are ids: the index of the
 * region in the manifest's `regions`; kernel names are ids into its `names`.
 *
 * Hooks a build may predefine:
 *   MOETRACE_GLOBAL     pointer qualifier of the ring memory (__gm__ on AscendC)
 *   MOETRACE_FN         function qualifiers
 *   MOETRACE_CLOCK()    device cycle counter (clock64() / GetSystemCycle(); 0 on host C)
 *   MOETRACE_RESERVE(p) fetch-and-increment of the uint64_t write counter at p
 *                       (atomicAdd on CUDA, so all threads of a block may emit;
 *                       a plain increment elsewhere: one writer per ring)
 *   MOETRACE_PUBLISH(p) make the record at p visible to the host, e.g. a dcci
 *                       cache-line write-back on AscendC (default: nothing)
 */
#ifndef MOETRACE_H
#define MOETRACE_H

#ifndef MOETRACE_NO_STDINT
#include <stddef.h>
#include <stdint.h>
#endif

#if defined(__CCE_KT_TEST__)
#define MOETRACE__ASCEND_CPU 1 /* AscendC kernel built for the CPU debug harness */
#elif defined(__CCE_AICORE__)
#define MOETRACE__ASCEND 1
#endif

#ifndef MOETRACE_GLOBAL
#if defined(MOETRACE__ASCEND)
#define MOETRACE_GLOBAL __gm__
#else
#define MOETRACE_GLOBAL
#endif
#endif

#ifndef MOETRACE_FN
#if defined(__CUDACC__)
#define MOETRACE_FN static __device__ __forceinline__
#elif defined(MOETRACE__ASCEND) || defined(MOETRACE__ASCEND_CPU)
#define MOETRACE_FN static __aicore__ inline
#else
#define MOETRACE_FN static inline
#endif
#endif

#ifndef MOETRACE_CLOCK
#if defined(__CUDACC__)
#define MOETRACE_CLOCK() ((uint64_t)clock64())
#elif defined(MOETRACE__ASCEND) || defined(MOETRACE__ASCEND_CPU)
#define MOETRACE_CLOCK() ((uint64_t)AscendC::GetSystemCycle())
#else
#define MOETRACE_CLOCK() ((uint64_t)0)
#endif
#endif

#ifndef MOETRACE_RESERVE
#if defined(__CUDACC__)
#define MOETRACE_RESERVE(p) ((uint64_t)atomicAdd((unsigned long long *)(p), 1ULL))
#else
#define MOETRACE_RESERVE(p) ((*(p))++)
#endif
#endif

#ifndef MOETRACE_PUBLISH
#define MOETRACE_PUBLISH(p) ((void)(p))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define MOETRACE_VERSION 1
#define MOETRACE_HEADER_SIZE 64
#define MOETRACE_RECORD_SIZE 64
/* Bytes of one ring holding `cap` records; usable in host code too. */
#define MOETRACE_RING_BYTES(cap) ((uint64_t)MOETRACE_HEADER_SIZE + (uint64_t)(cap) * MOETRACE_RECORD_SIZE)
/* "Absent" for optional arguments, the tracer's epoch and sites. */
#define MOETRACE_NONE INT64_MIN

/* Kind codes (ingest/contract.py Kind). */
#define MOETRACE_KIND_KERNEL_BEGIN 0
#define MOETRACE_KIND_KERNEL_END 1
#define MOETRACE_KIND_PUT 2
#define MOETRACE_KIND_GET 3
#define MOETRACE_KIND_PUT_SIGNAL 4
#define MOETRACE_KIND_SIGNAL 5
#define MOETRACE_KIND_AMO 6
#define MOETRACE_KIND_QUIET 7
#define MOETRACE_KIND_FENCE 8
#define MOETRACE_KIND_WAIT_BEGIN 9
#define MOETRACE_KIND_WAIT_END 10
#define MOETRACE_KIND_WRITE 11
#define MOETRACE_KIND_PIPE_SYNC 12
#define MOETRACE_KIND_ATOMIC_MODE 13
#define MOETRACE_KIND_BARRIER_BEGIN 14
#define MOETRACE_KIND_BARRIER_END 15
#define MOETRACE_KIND_ROUTE 16
#define MOETRACE_KIND_COUNT 17
#define MOETRACE_KIND_DELIVER 18

/* Enum codes (ingest/contract.py). */
#define MOETRACE_ENGINE_MTE 0
#define MOETRACE_ENGINE_SDMA 1
#define MOETRACE_ENGINE_UDMA 2
#define MOETRACE_ENGINE_ROCE 3
#define MOETRACE_ENGINE_LOCAL 4
#define MOETRACE_ENGINE_ALL 5
#define MOETRACE_ENGINE_P2P 6
#define MOETRACE_ENGINE_IBGDA 7
#define MOETRACE_OP_SET 0
#define MOETRACE_OP_ADD 1
#define MOETRACE_OP_NONE 2
#define MOETRACE_CMP_EQ 0
#define MOETRACE_CMP_NE 1
#define MOETRACE_CMP_GT 2
#define MOETRACE_CMP_GE 3
#define MOETRACE_CMP_LT 4
#define MOETRACE_CMP_LE 5
#define MOETRACE_OUTCOME_OK 0
#define MOETRACE_OUTCOME_TIMEOUT 1
#define MOETRACE_SCOPE_ALL 0
#define MOETRACE_SCOPE_CORE 1
#define MOETRACE_SCOPE_TEAM 2
#define MOETRACE_PIPE_OP_SET_FLAG 0
#define MOETRACE_PIPE_OP_WAIT_FLAG 1
#define MOETRACE_PIPE_OP_PIPE_BARRIER 2
#define MOETRACE_PIPE_OP_CROSS_CORE_SET 3
#define MOETRACE_PIPE_OP_CROSS_CORE_WAIT 4
#define MOETRACE_PIPE_OP_SYNC_ALL 5
#define MOETRACE_EVENT_MTE3_S 0
#define MOETRACE_EVENT_S_MTE3 1
#define MOETRACE_EVENT_MTE3_MTE2 2
#define MOETRACE_EVENT_MTE2_MTE3 3
#define MOETRACE_EVENT_MTE2_S 4
#define MOETRACE_EVENT_S_MTE2 5
#define MOETRACE_EVENT_MTE3 6
#define MOETRACE_EVENT_ALL 7
#define MOETRACE_DTYPE_INT8 0
#define MOETRACE_DTYPE_INT16 1
#define MOETRACE_DTYPE_INT32 2
#define MOETRACE_DTYPE_INT64 3
#define MOETRACE_DTYPE_UINT32 4
#define MOETRACE_DTYPE_UINT64 5
#define MOETRACE_DTYPE_HALF 6
#define MOETRACE_DTYPE_BFLOAT16 7
#define MOETRACE_DTYPE_FLOAT 8

/* Presence bits: site, epoch, then each kind's optional fields in order. */
#define MOETRACE_P_SITE 0x1u
#define MOETRACE_P_EPOCH 0x2u
#define MOETRACE_P_OPT0 0x4u
#define MOETRACE_P_OPT1 0x8u
#define MOETRACE_P_OPT2 0x10u

typedef struct moetrace_ring_header {
    char magic[6];        /*  0 "MTRACE" */
    uint16_t version;     /*  6 MOETRACE_VERSION */
    uint16_t record_size; /*  8 64 */
    uint16_t header_size; /* 10 64 */
    uint32_t capacity;    /* 12 records in the ring */
    uint64_t write_count; /* 16 records ever written */
    uint32_t rank;        /* 24 */
    uint32_t core;        /* 28 */
    uint32_t stored;      /* 32 records following in a dump (capacity) */
    uint8_t reserved[28]; /* 36 zero */
} moetrace_ring_header_t;

typedef struct moetrace_record {
    uint64_t ts;      /*  0 MOETRACE_CLOCK() */
    uint32_t seq_lo;  /*  8 low 32 bits of the record's index, written last */
    int32_t launch;   /* 12 */
    uint8_t kind;     /* 16 */
    uint8_t e0;       /* 17 first enum */
    uint8_t e1;       /* 18 second enum */
    uint8_t e2;       /* 19 third enum (amo dtype), else zero */
    uint16_t present; /* 20 presence bits */
    int16_t h;        /* 22 peer / topk / src_rank */
    uint16_t r0;      /* 24 region */
    uint16_t r1;      /* 26 local_region / sig_region */
    int32_t site;     /* 28 */
    int32_t u;        /* 32 nbytes / words / token / local_expert / name id */
    int32_t v;        /* 36 sig_offset / expert / capacity */
    int64_t x;        /* 40 offset / dst_rank / delivered */
    int64_t y;        /* 48 value / observed / local_offset / slot / requested */
    int64_t epoch;    /* 56 */
} moetrace_record_t;

/* Compile-time layout checks (C99 has no _Static_assert). */
typedef char moetrace__hdr_size[sizeof(moetrace_ring_header_t) == MOETRACE_HEADER_SIZE ? 1 : -1];
typedef char moetrace__rec_size[sizeof(moetrace_record_t) == MOETRACE_RECORD_SIZE ? 1 : -1];
typedef char moetrace__rec_epoch[offsetof(moetrace_record_t, epoch) == 56 ? 1 : -1];

/* A core's handle on its ring, kept in registers / local memory. */
typedef struct moetrace {
    MOETRACE_GLOBAL moetrace_ring_header_t *ring;
    int32_t launch;
    int64_t epoch; /* MOETRACE_NONE: events carry no epoch */
} moetrace_t;

/* The ring of core `index` in a buffer of back-to-back rings of `capacity` records. */
MOETRACE_FN MOETRACE_GLOBAL moetrace_ring_header_t *moetrace_ring_at(MOETRACE_GLOBAL void *base,
                                                                     uint32_t capacity, uint32_t index)
{
    return (MOETRACE_GLOBAL moetrace_ring_header_t *)((MOETRACE_GLOBAL uint8_t *)base +
                                                      MOETRACE_RING_BYTES(capacity) * index);
}

/* Initialise a ring (once, before the first launch that records into it). */
MOETRACE_FN void moetrace_ring_init(MOETRACE_GLOBAL moetrace_ring_header_t *ring, uint32_t capacity,
                                    uint32_t rank, uint32_t core)
{
    int i;
    ring->magic[0] = 'M';
    ring->magic[1] = 'T';
    ring->magic[2] = 'R';
    ring->magic[3] = 'A';
    ring->magic[4] = 'C';
    ring->magic[5] = 'E';
    ring->version = MOETRACE_VERSION;
    ring->record_size = MOETRACE_RECORD_SIZE;
    ring->header_size = MOETRACE_HEADER_SIZE;
    ring->capacity = capacity;
    ring->write_count = 0;
    ring->rank = rank;
    ring->core = core;
    ring->stored = capacity;
    for (i = 0; i < 28; ++i) {
        ring->reserved[i] = 0;
    }
    MOETRACE_PUBLISH(ring);
}

MOETRACE_FN moetrace_t moetrace_open(MOETRACE_GLOBAL moetrace_ring_header_t *ring, int32_t launch, int64_t epoch)
{
    moetrace_t t;
    t.ring = ring;
    t.launch = launch;
    t.epoch = epoch;
    return t;
}

/* The one writer: reserve index i, fill slot i % capacity, seq_lo last. */
MOETRACE_FN void moetrace__emit(const moetrace_t *t, unsigned kind, unsigned e0, unsigned e1, unsigned present,
                                int64_t site, int h, unsigned r0, unsigned r1, int64_t u, int64_t v, int64_t x,
                                int64_t y, unsigned e2)
{
    MOETRACE_GLOBAL moetrace_ring_header_t *ring = t->ring;
    MOETRACE_GLOBAL moetrace_record_t *rec;
    uint64_t ts = MOETRACE_CLOCK();
    uint64_t i = MOETRACE_RESERVE(&ring->write_count);
    uint32_t cap = ring->capacity;
    uint64_t slot = (cap & (cap - 1u)) == 0u ? (i & (uint64_t)(cap - 1u)) : (i % cap);
    rec = (MOETRACE_GLOBAL moetrace_record_t *)((MOETRACE_GLOBAL uint8_t *)ring + MOETRACE_HEADER_SIZE) + slot;
    if (site != MOETRACE_NONE) {
        present |= MOETRACE_P_SITE;
    }
    if (t->epoch != MOETRACE_NONE) {
        present |= MOETRACE_P_EPOCH;
    }
    rec->ts = ts;
    rec->launch = t->launch;
    rec->kind = (uint8_t)kind;
    rec->e0 = (uint8_t)e0;
    rec->e1 = (uint8_t)e1;
    rec->e2 = (uint8_t)e2;
    rec->present = (uint16_t)present;
    rec->h = (int16_t)h;
    rec->r0 = (uint16_t)r0;
    rec->r1 = (uint16_t)r1;
    rec->site = site == MOETRACE_NONE ? 0 : (int32_t)site;
    rec->u = (int32_t)u;
    rec->v = (int32_t)v;
    rec->x = x;
    rec->y = y;
    rec->epoch = t->epoch == MOETRACE_NONE ? 0 : t->epoch;
    rec->seq_lo = (uint32_t)i;
    MOETRACE_PUBLISH(rec);
}

/* An optional argument's value (0 when absent) and its presence bit. */
#define MOETRACE__OPT(a) ((a) == MOETRACE_NONE ? 0 : (a))
#define MOETRACE__HAS(a, bit) ((a) == MOETRACE_NONE ? 0u : (bit))

MOETRACE_FN void moetrace_kernel_begin(const moetrace_t *t, int64_t site, int32_t name_id)
{
    moetrace__emit(t, MOETRACE_KIND_KERNEL_BEGIN, 0, 0, 0, site, 0, 0, 0, name_id, 0, 0, 0, 0);
}

MOETRACE_FN void moetrace_kernel_end(const moetrace_t *t, int64_t site, int32_t name_id)
{
    moetrace__emit(t, MOETRACE_KIND_KERNEL_END, 0, 0, 0, site, 0, 0, 0, name_id, 0, 0, 0, 0);
}

/* value: the word a flag-pattern put writes, or MOETRACE_NONE. */
MOETRACE_FN void moetrace_put(const moetrace_t *t, int64_t site, unsigned engine, int peer, unsigned region,
                              int64_t offset, int32_t nbytes, int64_t value)
{
    moetrace__emit(t, MOETRACE_KIND_PUT, engine, 0, MOETRACE__HAS(value, MOETRACE_P_OPT0), site, peer, region, 0,
                   nbytes, 0, offset, MOETRACE__OPT(value), 0);
}

MOETRACE_FN void moetrace_get(const moetrace_t *t, int64_t site, unsigned engine, int peer, unsigned region,
                              int64_t offset, int32_t nbytes, unsigned local_region, int64_t local_offset)
{
    moetrace__emit(t, MOETRACE_KIND_GET, engine, 0, 0, site, peer, region, local_region, nbytes, 0, offset,
                   local_offset, 0);
}

MOETRACE_FN void moetrace_put_signal(const moetrace_t *t, int64_t site, unsigned engine, int peer, unsigned region,
                                     int64_t offset, int32_t nbytes, unsigned sig_region, int32_t sig_offset,
                                     unsigned op, int64_t value)
{
    moetrace__emit(t, MOETRACE_KIND_PUT_SIGNAL, engine, op, 0, site, peer, region, sig_region, nbytes, sig_offset,
                   offset, value, 0);
}

MOETRACE_FN void moetrace_signal(const moetrace_t *t, int64_t site, unsigned engine, int peer, unsigned region,
                                 int64_t offset, unsigned op, int64_t value)
{
    moetrace__emit(t, MOETRACE_KIND_SIGNAL, engine, op, 0, site, peer, region, 0, 0, 0, offset, value, 0);
}

MOETRACE_FN void moetrace_amo(const moetrace_t *t, int64_t site, unsigned engine, int peer, unsigned region,
                              int64_t offset, unsigned op, int64_t value)
{
    moetrace__emit(t, MOETRACE_KIND_AMO, engine, op, 0, site, peer, region, 0, 0, 0, offset, value, 0);
}

/* An amo that names its element type (the unified API's TYPE): dtype a MOETRACE_DTYPE_* code, or MOETRACE_NONE. */
MOETRACE_FN void moetrace_amo_dtype(const moetrace_t *t, int64_t site, unsigned engine, int peer, unsigned region,
                                    int64_t offset, unsigned op, int64_t value, int64_t dtype)
{
    moetrace__emit(t, MOETRACE_KIND_AMO, engine, op, MOETRACE__HAS(dtype, MOETRACE_P_OPT0), site, peer, region, 0, 0,
                   0, offset, value, (unsigned)MOETRACE__OPT(dtype));
}

/* A put that names its local source (region and offset in elements), so reusing the source
 * before the put's quiet is visible; value as moetrace_put, or MOETRACE_NONE. */
MOETRACE_FN void moetrace_put_from(const moetrace_t *t, int64_t site, unsigned engine, int peer, unsigned region,
                                   int64_t offset, int32_t nbytes, int64_t value, unsigned local_region,
                                   int32_t local_offset)
{
    moetrace__emit(t, MOETRACE_KIND_PUT, engine, 0,
                   MOETRACE__HAS(value, MOETRACE_P_OPT0) | MOETRACE_P_OPT1 | MOETRACE_P_OPT2, site, peer, region,
                   local_region, nbytes, local_offset, offset, MOETRACE__OPT(value), 0);
}

/* peer: MOETRACE_NONE for a quiet of every peer. */
MOETRACE_FN void moetrace_quiet(const moetrace_t *t, int64_t site, unsigned engine, int64_t peer)
{
    moetrace__emit(t, MOETRACE_KIND_QUIET, engine, 0, MOETRACE__HAS(peer, MOETRACE_P_OPT0), site,
                   (int)MOETRACE__OPT(peer), 0, 0, 0, 0, 0, 0, 0);
}

MOETRACE_FN void moetrace_fence(const moetrace_t *t, int64_t site, int64_t engine, int64_t peer)
{
    moetrace__emit(t, MOETRACE_KIND_FENCE, (unsigned)MOETRACE__OPT(engine), 0,
                   MOETRACE__HAS(engine, MOETRACE_P_OPT0) | MOETRACE__HAS(peer, MOETRACE_P_OPT1), site,
                   (int)MOETRACE__OPT(peer), 0, 0, 0, 0, 0, 0, 0);
}

/* words: consecutive words that must all satisfy cmp, or MOETRACE_NONE (1). */
MOETRACE_FN void moetrace_wait_begin(const moetrace_t *t, int64_t site, unsigned region, int64_t offset, unsigned cmp,
                                     int64_t value, int64_t words)
{
    moetrace__emit(t, MOETRACE_KIND_WAIT_BEGIN, cmp, 0, MOETRACE__HAS(words, MOETRACE_P_OPT0), site, 0, region, 0,
                   MOETRACE__OPT(words), 0, offset, value, 0);
}

/* outcome: MOETRACE_OUTCOME_OK / _TIMEOUT, or MOETRACE_NONE. */
MOETRACE_FN void moetrace_wait_end(const moetrace_t *t, int64_t site, unsigned region, int64_t offset,
                                   int64_t observed, int64_t outcome)
{
    moetrace__emit(t, MOETRACE_KIND_WAIT_END, (unsigned)MOETRACE__OPT(outcome), 0,
                   MOETRACE__HAS(outcome, MOETRACE_P_OPT0), site, 0, region, 0, 0, 0, offset, observed, 0);
}

MOETRACE_FN void moetrace_write(const moetrace_t *t, int64_t site, unsigned region, int64_t offset, int32_t nbytes,
                                int64_t value)
{
    moetrace__emit(t, MOETRACE_KIND_WRITE, 0, 0, 0, site, 0, region, 0, nbytes, 0, offset, value, 0);
}

MOETRACE_FN void moetrace_pipe_sync(const moetrace_t *t, int64_t site, unsigned pipe_op, unsigned event)
{
    moetrace__emit(t, MOETRACE_KIND_PIPE_SYNC, pipe_op, event, 0, site, 0, 0, 0, 0, 0, 0, 0, 0);
}

MOETRACE_FN void moetrace_atomic_mode(const moetrace_t *t, int64_t site, unsigned op, int64_t dtype)
{
    moetrace__emit(t, MOETRACE_KIND_ATOMIC_MODE, (unsigned)MOETRACE__OPT(dtype), op,
                   MOETRACE__HAS(dtype, MOETRACE_P_OPT0), site, 0, 0, 0, 0, 0, 0, 0, 0);
}

MOETRACE_FN void moetrace_barrier_begin(const moetrace_t *t, int64_t site, unsigned scope, int64_t value)
{
    moetrace__emit(t, MOETRACE_KIND_BARRIER_BEGIN, scope, 0, MOETRACE__HAS(value, MOETRACE_P_OPT0), site, 0, 0, 0,
                   0, 0, 0, MOETRACE__OPT(value), 0);
}

MOETRACE_FN void moetrace_barrier_end(const moetrace_t *t, int64_t site, unsigned scope, int64_t value)
{
    moetrace__emit(t, MOETRACE_KIND_BARRIER_END, scope, 0, MOETRACE__HAS(value, MOETRACE_P_OPT0), site, 0, 0, 0, 0,
                   0, 0, MOETRACE__OPT(value), 0);
}

/* dst_rank, slot: where the pair was sent, or MOETRACE_NONE. */
MOETRACE_FN void moetrace_route(const moetrace_t *t, int64_t site, int32_t token, int topk, int32_t expert,
                                int64_t dst_rank, int64_t slot)
{
    moetrace__emit(t, MOETRACE_KIND_ROUTE, 0, 0,
                   MOETRACE__HAS(dst_rank, MOETRACE_P_OPT0) | MOETRACE__HAS(slot, MOETRACE_P_OPT1), site, topk, 0,
                   0, token, expert, MOETRACE__OPT(dst_rank), MOETRACE__OPT(slot), 0);
}

MOETRACE_FN void moetrace_count(const moetrace_t *t, int64_t site, int peer, int32_t local_expert, int64_t value,
                                int64_t capacity)
{
    moetrace__emit(t, MOETRACE_KIND_COUNT, 0, 0, MOETRACE__HAS(capacity, MOETRACE_P_OPT0), site, peer, 0, 0,
                   local_expert, MOETRACE__OPT(capacity), 0, value, 0);
}

MOETRACE_FN void moetrace_deliver(const moetrace_t *t, int64_t site, int32_t local_expert, int src_rank,
                                  int32_t requested, int32_t delivered, int32_t capacity)
{
    moetrace__emit(t, MOETRACE_KIND_DELIVER, 0, 0, 0, site, src_rank, 0, 0, local_expert, capacity, delivered,
                   requested, 0);
}

#ifdef __cplusplus
}
#endif

#endif /* MOETRACE_H */
