/*
 * kernels.c - the classic MoE dispatch/combine (cann/shmem dispatch_classic +
 * combine_classic_once, see shared/reference/protocols.md) on OpenSHMEM, one
 * pthread per core, recorded through kernels/device/moetrace.h the way
 * docs/trace-format.md tells a user to: every one-sided operation right after
 * its call, every wait as wait_begin before and wait_end after, every route
 * where the kernel reads expert_ids. Call-site ids are this file's __LINE__.
 *
 * One launch per round: dispatch (generation barrier 2g+1, route, payload put +
 * quiet, assist, ready, count, the atomic row total; core 0 receives, compacts,
 * runs the experts, resets ready / count / total / done), then combine (results
 * back to token*K+topk with an 8-word status; the owner waits all K statuses,
 * sums, resets them; generation barrier 2g+2). The generation barrier replaces
 * the host's barrier between rounds: each rank sets its word on every peer to k
 * and waits every word >= k (a fast peer may already have stored k+1).
 */
#include <shmem.h>
#include <signal.h>
#include <unistd.h>

#include "moe.h"

#define MOETRACE_CLOCK() moe_clock_ns()
#include <time.h>
static uint64_t moe_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#include "../../kernels/device/moetrace.h"

/* OpenSHMEM over UCX: every call is one network-style RMA engine whose puts complete at quiet. */
#define ENG MOETRACE_ENGINE_ROCE
#define NONE MOETRACE_NONE

static const int32_t ONES[SLOT] = {1, 1, 1, 1, 1, 1, 1, 1};

/* Wait until all `words` words at region[off] equal v, recorded as one wait. */
static void wait_words(const moetrace_t *t, struct moe *m, int site, int region, int64_t off, int words, int v)
{
    int w;
    moetrace_wait_begin(t, site, region, off, MOETRACE_CMP_EQ, v, words == 1 ? NONE : words);
    for (w = 0; w < words; ++w) {
        shmem_int_wait_until(&m->region[region][off + w], SHMEM_CMP_EQ, v);
    }
    moetrace_wait_end(t, site, region, off, m->region[region][off], MOETRACE_OUTCOME_OK);
}

/* A local reset of `words` words, recorded as one write. */
static void reset_words(const moetrace_t *t, struct moe *m, int site, int region, int64_t off, int words, int v)
{
    int w;
    for (w = 0; w < words; ++w) {
        m->region[region][off + w] = v;
    }
    moetrace_write(t, site, region, off, words * 4, v);
}

static void core_barrier(const moetrace_t *t, struct moe *m)
{
    moetrace_barrier_begin(t, __LINE__, MOETRACE_SCOPE_CORE, NONE);
    pthread_barrier_wait(&m->cores);
    moetrace_barrier_end(t, __LINE__, MOETRACE_SCOPE_CORE, NONE);
}

/* Core 0: the generation barrier k; its events carry k as their epoch. */
static void gen_barrier(const moetrace_t *t0, struct moe *m, int launch, int k)
{
    const struct config *c = m->cfg;
    moetrace_t t = moetrace_open(t0->ring, t0->launch, k);
    int eq = fault_here(m, F_GEN_EQ, 0, -1);
    int s, cmp = eq ? SHMEM_CMP_EQ : SHMEM_CMP_GE;
    for (s = 0; s < c->ranks; ++s) {
        shmem_int_atomic_set(&m->region[R_GEN][c->rank], k, s);
        moetrace_signal(&t, __LINE__, ENG, s, R_GEN, c->rank, MOETRACE_OP_SET, k);
    }
    if (k % 2 == 0) {
        straggle(m, AT_GENERATION, launch); /* its peers pass k and store k+1 before it looks */
    }
    for (s = 0; s < c->ranks; ++s) {
        moetrace_wait_begin(&t, __LINE__, R_GEN, s, eq ? MOETRACE_CMP_EQ : MOETRACE_CMP_GE, k, NONE);
        shmem_int_wait_until(&m->region[R_GEN][s], cmp, k);
        moetrace_wait_end(&t, __LINE__, R_GEN, s, m->region[R_GEN][s], MOETRACE_OUTCOME_OK);
    }
}

/* Core 0 reads expert_ids: every (token, topk) once, before any filtering by destination. */
static void record_routes(const moetrace_t *t, struct moe *m)
{
    int ne = m->cfg->ranks * E_L, seen[MAX_RANKS * E_L] = {0}, tok, k;
    for (tok = 0; tok < B; ++tok) {
        for (k = 0; k < K; ++k) {
            int e = m->expert_ids[tok][k];
            if (e >= 0 && e < ne) {
                moetrace_route(t, __LINE__, tok, k, e, e / E_L, seen[e]++);
            } else {
                moetrace_route(t, __LINE__, tok, k, e, NONE, NONE);
            }
        }
    }
}

/* The pairs routed to dst: payload put + quiet each, assist, ready, count, the atomic total. */
static void send_to(const moetrace_t *t, struct moe *m, int core, int launch, int dst, int shift)
{
    const struct config *c = m->cfg;
    int me = c->rank, P = c->ranks, nq = fault_here(m, F_MISSING_QUIET, core, launch);
    int seg_count[E_L] = {0}, seg_off[E_L] = {0}, gslot[B * K], loc[B * K], tok[B * K], top[B * K];
    int n = 0, i, le, flat;
    for (flat = 0; flat < B * K; ++flat) {
        int e = m->expert_ids[flat / K][flat % K];
        if (e >= 0 && e < P * E_L && e / E_L == dst) {
            le = e % E_L;
            loc[n] = le;
            tok[n] = flat / K;
            top[n] = flat % K;
            gslot[n] = (me * E_L + le) * (B * K) + seg_off[le]++;
            seg_count[le]++;
            shmem_int_put_nbi(&m->region[R_PAYLOAD][(int64_t)gslot[n] * H], m->x[tok[n]], H, dst);
            moetrace_put(t, __LINE__, ENG, dst, R_PAYLOAD, (int64_t)gslot[n] * H, H * 4, NONE);
            if (!nq) {
                shmem_quiet();
                moetrace_quiet(t, __LINE__, ENG, dst);
            }
            ++n;
        }
    }
    if (core == 0 && fault_here(m, F_PE_KILLED, 0, launch)) {
        kill(getpid(), SIGKILL); /* dies mid-dispatch: payload sent, no assist, ready or count */
    }
    for (i = 0; i < n; ++i) {
        int64_t a = (int64_t)gslot[i] * SLOT;
        shmem_int_p(&m->region[R_ASSIST][a], me, dst);
        moetrace_signal(t, __LINE__, ENG, dst, R_ASSIST, a, MOETRACE_OP_SET, me);
        shmem_int_p(&m->region[R_ASSIST][a + 1], tok[i], dst);
        moetrace_signal(t, __LINE__, ENG, dst, R_ASSIST, a + 1, MOETRACE_OP_SET, tok[i]);
        shmem_int_p(&m->region[R_ASSIST][a + 2], top[i], dst);
        moetrace_signal(t, __LINE__, ENG, dst, R_ASSIST, a + 2, MOETRACE_OP_SET, top[i]);
    }
    if (!nq) {
        shmem_quiet();
        moetrace_quiet(t, __LINE__, ENG, dst);
    }
    for (le = 0; le < E_L; ++le) {
        int32_t cnt[SLOT] = {1, 0, 0, 0, 0, 0, 0, 0};
        int64_t seg = (int64_t)(le * P + me) * SLOT;
        for (i = 0; i < n; ++i) {
            if (loc[i] == le) {
                int64_t r = (int64_t)(gslot[i] + shift) * SLOT; /* shift: the F_READY_OFF bug */
                shmem_int_put_nbi(&m->region[R_READY][r], ONES, SLOT, dst);
                moetrace_put(t, __LINE__, ENG, dst, R_READY, r, SLOT * 4, 1);
            }
        }
        shmem_quiet();
        moetrace_quiet(t, __LINE__, ENG, dst);
        cnt[1] = seg_count[le];
        moetrace_count(t, __LINE__, dst, le, seg_count[le], B * K);
        shmem_int_put(&m->region[R_COUNT][seg], cnt, SLOT, dst);
        moetrace_put(t, __LINE__, ENG, dst, R_COUNT, seg, SLOT * 4, 1);
        shmem_quiet();
        moetrace_quiet(t, __LINE__, ENG, dst);
    }
    shmem_int_atomic_add(&m->region[R_TOTAL][0], n, dst);
    moetrace_amo(t, __LINE__, ENG, dst, R_TOTAL, 0, MOETRACE_OP_ADD, n);
    if (!fault_here(m, F_AMO_BEFORE_QUIET, core, launch)) {
        shmem_quiet();
        moetrace_quiet(t, __LINE__, ENG, dst);
    }
    shmem_int_atomic_set(&m->region[R_DONE][me], 1, dst);
    moetrace_signal(t, __LINE__, ENG, dst, R_DONE, me, MOETRACE_OP_SET, 1);
    shmem_quiet();
    moetrace_quiet(t, __LINE__, ENG, dst);
}

/* Core 0: wait the counts and the atomic total, take every ready slot, compact, run the experts, reset. */
static void receive(const moetrace_t *t, struct moe *m, int launch)
{
    const struct config *c = m->cfg;
    int P = c->ranks, me = c->rank, running = 0, row = 0, seg, s, i, h;
    int keep_count = fault_here(m, F_COUNT_NOT_RESET, 0, launch);
    for (seg = 0; seg < E_L * P; ++seg) {
        int n;
        wait_words(t, m, __LINE__, R_COUNT, (int64_t)seg * SLOT, 1, 1);
        n = m->region[R_COUNT][(int64_t)seg * SLOT + 1];
        running += n < 0 ? 0 : (n > B * K ? B * K : n); /* a garbage count cannot index past the segment */
        m->ep_recv_count[seg] = running;
    }
    for (s = 0; s < P; ++s) {
        wait_words(t, m, __LINE__, R_DONE, s, 1, 1);
    }
    m->total_mismatch = m->region[R_TOTAL][0] != running;
    reset_words(t, m, __LINE__, R_TOTAL, 0, 1, 0);
    reset_words(t, m, __LINE__, R_DONE, 0, P, 0);
    for (seg = 0; seg < E_L * P; ++seg) {
        int le = seg / P, src = seg % P, n = m->ep_recv_count[seg] - (seg ? m->ep_recv_count[seg - 1] : 0);
        for (i = 0; i < n; ++i, ++row) {
            int64_t g = (int64_t)(src * E_L + le) * (B * K) + i;
            wait_words(t, m, __LINE__, R_READY, g * SLOT, SLOT, 1);
            for (h = 0; h < H; ++h) {
                m->expand_y[row][h] = expert_fn(m->region[R_PAYLOAD][g * H + h], me * E_L + le);
            }
            for (h = 0; h < 3; ++h) {
                m->expand_assist[row][h] = m->region[R_ASSIST][g * SLOT + h];
            }
            reset_words(t, m, __LINE__, R_READY, g * SLOT, SLOT, 0);
        }
        moetrace_deliver(t, __LINE__, le, src, n, n, B * K);
        if (!keep_count) {
            reset_words(t, m, __LINE__, R_COUNT, (int64_t)seg * SLOT, SLOT, COUNT_INIT);
        }
    }
}

static void dispatch(const moetrace_t *t, struct moe *m, int core, int launch)
{
    const struct config *c = m->cfg;
    int dst, off_dst = -1;
    moetrace_kernel_begin(t, __LINE__, NAME_DISPATCH);
    if (core == 0) {
        gen_barrier(t, m, launch, 2 * launch + 1);
        record_routes(t, m);
    }
    core_barrier(t, m);
    straggle(m, AT_DISPATCH, launch);
    if (fault_here(m, F_READY_OFF, core, launch)) {
        for (dst = core; dst < c->ranks && off_dst < 0; dst += CORES) {
            off_dst = dst != c->rank ? dst : -1; /* the first peer this core serves */
        }
    }
    for (dst = core; dst < c->ranks; dst += CORES) {
        send_to(t, m, core, launch, dst, dst == off_dst);
    }
    core_barrier(t, m);
    if (core == 0) {
        receive(t, m, launch);
    }
    moetrace_kernel_end(t, __LINE__, NAME_DISPATCH);
}

static void combine(const moetrace_t *t, struct moe *m, int core, int launch)
{
    const struct config *c = m->cfg;
    int P = c->ranks, ne = P * E_L, owner, le, row, tok, k, h;
    int keep_status = fault_here(m, F_STATUS_NOT_RESET, core, launch);
    moetrace_kernel_begin(t, __LINE__, NAME_COMBINE);
    straggle(m, AT_COMBINE, launch);
    for (owner = core; owner < P; owner += CORES) {
        for (le = 0; le < E_L; ++le) {
            int seg = le * P + owner, end = m->ep_recv_count[seg];
            for (row = seg ? m->ep_recv_count[seg - 1] : 0; row < end; ++row) {
                int src = m->expand_assist[row][0], slot = m->expand_assist[row][1] * K + m->expand_assist[row][2];
                if (src < 0 || src >= P || slot < 0 || slot >= B * K) {
                    continue; /* garbage assist (a stale count took a slot nobody wrote) */
                }
                shmem_int_put_nbi(&m->region[R_CDATA][(int64_t)slot * H], m->expand_y[row], H, src);
                moetrace_put(t, __LINE__, ENG, src, R_CDATA, (int64_t)slot * H, H * 4, NONE);
                shmem_quiet();
                moetrace_quiet(t, __LINE__, ENG, src);
                shmem_int_put_nbi(&m->region[R_CSTATUS][(int64_t)slot * SLOT], ONES, SLOT, src);
                moetrace_put(t, __LINE__, ENG, src, R_CSTATUS, (int64_t)slot * SLOT, SLOT * 4, 1);
                shmem_quiet();
                moetrace_quiet(t, __LINE__, ENG, src);
            }
        }
    }
    for (tok = core; tok < B; tok += CORES) {
        for (k = 0; k < K; ++k) {
            wait_words(t, m, __LINE__, R_CSTATUS, (int64_t)(tok * K + k) * SLOT, SLOT, 1);
        }
        for (k = 0; k < K; ++k) {
            int e = m->expert_ids[tok][k];
            for (h = 0; h < H && e >= 0 && e < ne; ++h) { /* like combine_classic l.120: valid ids only */
                m->out[tok][h] += (int64_t)m->region[R_CDATA][(int64_t)(tok * K + k) * H + h] * m->scales[tok][k];
            }
        }
        for (k = 0; k < K && !keep_status; ++k) {
            reset_words(t, m, __LINE__, R_CSTATUS, (int64_t)(tok * K + k) * SLOT, SLOT, 0);
        }
    }
    core_barrier(t, m);
    if (core == 0) {
        gen_barrier(t, m, launch, 2 * launch + 2);
    }
    moetrace_kernel_end(t, __LINE__, NAME_COMBINE);
}

void *core_main(void *arg)
{
    struct core_arg *a = arg;
    struct moe *m = a->m;
    moetrace_t t = moetrace_open(moetrace_ring_at(m->rings, m->cfg->ring_capacity, a->core), a->launch, NONE);
    dispatch(&t, m, a->core, a->launch);
    pthread_barrier_wait(&m->cores); /* stream order: combine starts when every core's dispatch ended */
    combine(&t, m, a->core, a->launch);
    return NULL;
}
