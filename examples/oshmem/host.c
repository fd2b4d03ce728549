/*
 * host.c - the host of the OpenSHMEM classic dispatch/combine: symmetric
 * regions, rings, the manifest, the watchdog, one launch per round (CORES
 * pthreads), the output check, the per-PE marker and the dump.
 *
 *   moe_classic OUT [--rounds N] [--ring-capacity C] [--watchdog S]
 *               [--straggle R [--straggle-at generation|dispatch|combine] [--straggle-launch L]]
 *               [--fault NAME --rank R --core C --round G --token T --topk K]
 *
 * Writes OUT/manifest.json (rank 0), OUT/rankR.mtr (every PE whose process
 * lives to dump: at the end, or from the watchdog on a hang) and
 * OUT/rankR.status: "ok", "wrong N" (N output rows differ from the reference,
 * plus one per launch whose atomic row total disagreed with the counts), "hang"
 * (no progress for the watchdog's time). A killed PE leaves neither. shmem_finalize crashes in UCX here: the
 * run ends with a barrier and _exit.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../kernels/device/moetrace_host.h"
#include "moe.h"

static const char *const FAULT_NAMES[N_FAULTS] = {
    "none", "invalid-expert", "status-not-reset", "count-not-reset", "ready-off",
    "pe-killed", "generation-eq", "missing-quiet", "amo-before-quiet"};
static const char *const STRAGGLE_POINTS[3] = {"generation", "dispatch", "combine"};
static const char *const REGION_NAMES[N_REGIONS] = {"payload", "assist", "ready", "count", "combine_data",
                                                    "combine_status", "gen", "total", "done"};
static const char *const REGION_ROLES[N_REGIONS] = {"payload", "meta", "flag", "counter", "payload",
                                                    "flag", "flag", "counter", "flag"};
static const char *const KERNEL_NAMES[N_NAMES] = {"dispatch_classic", "combine_classic"};

int64_t slots_total(int ranks) { return (int64_t)ranks * E_L * B * K; }

int fault_here(const struct moe *m, enum fault f, int core, int launch)
{
    const struct config *c = m->cfg;
    return c->fault == f && c->rank == c->fault_rank && (core < 0 || c->fault_core < 0 || core == c->fault_core) &&
           (launch < 0 || launch == c->fault_round);
}

void straggle(const struct moe *m, enum straggle_point at, int launch)
{
    const struct config *c = m->cfg;
    if (c->straggle == c->rank && c->straggle_at == at && c->straggle_launch == launch) {
        usleep(STRAGGLE_US);
    }
}

int32_t expert_fn(int32_t x, int32_t e) { return x * (e % 5 + 1) + e % 7; }

/* Deterministic per (rank, launch): tokens, top-K distinct experts, scales. */
void make_inputs(struct moe *m, int launch)
{
    const struct config *c = m->cfg;
    uint64_t s = 0x9E3779B97F4A7C15ull ^ ((uint64_t)c->rank << 32) ^ (uint64_t)(launch + 1);
    int ne = c->ranks * E_L, t, k, h;
#define NEXT() (s = s * 6364136223846793005ull + 1442695040888963407ull, (int)(s >> 33))
    for (t = 0; t < B; ++t) {
        int first = NEXT() % ne, step = 1 + NEXT() % (ne - 1);
        for (k = 0; k < K; ++k) {
            m->expert_ids[t][k] = (first + k * step) % ne; /* distinct for K <= 2 */
            m->scales[t][k] = 1 + NEXT() % 3;
        }
        for (h = 0; h < H; ++h) {
            m->x[t][h] = NEXT() % 16 - 8;
            m->out[t][h] = 0;
        }
    }
#undef NEXT
    if (fault_here(m, F_INVALID_EXPERT, -1, launch)) {
        m->expert_ids[c->fault_token][c->fault_topk] = ne; /* the router's bug: one id past the last expert */
    }
}

/* Rows of this rank's output that differ from the reference (valid experts only, like combine). */
static int wrong_rows(const struct moe *m)
{
    int ne = m->cfg->ranks * E_L, wrong = 0, t, k, h;
    for (t = 0; t < B; ++t) {
        int bad = 0;
        for (h = 0; h < H; ++h) {
            int64_t want = 0;
            for (k = 0; k < K; ++k) {
                int e = m->expert_ids[t][k];
                want += e >= 0 && e < ne ? (int64_t)expert_fn(m->x[t][h], e) * m->scales[t][k] : 0;
            }
            bad |= want != m->out[t][h];
        }
        wrong += bad;
    }
    return wrong;
}

static void write_text(const struct config *c, const char *name, const char *text)
{
    char path[4096], tmp[4200];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", c->out, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    f = fopen(tmp, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "rank %d: cannot write %s\n", c->rank, path);
    }
}

static void write_manifest(const struct moe *m)
{
    const struct config *c = m->cfg;
    char doc[8192];
    int n = 0, r;
    n += snprintf(doc + n, sizeof doc - n,
                  "{\"format\": \"moetrace-trace/1\", \"ranks\": %d, \"cores\": %d,\n"
                  " \"params\": {\"tokens\": %d, \"topk\": %d, \"num_experts\": %d, \"local_experts\": %d},\n"
                  " \"names\": [\"%s\", \"%s\"],\n \"regions\": [\n",
                  c->ranks, CORES, B, K, c->ranks * E_L, E_L, KERNEL_NAMES[0], KERNEL_NAMES[1]);
    for (r = 0; r < N_REGIONS; ++r) {
        n += snprintf(doc + n, sizeof doc - n,
                      "  {\"name\": \"%s\", \"role\": \"%s\", \"elem_bytes\": 4, \"length\": %lld}%s\n",
                      REGION_NAMES[r], REGION_ROLES[r], (long long)m->region_len[r], r + 1 < N_REGIONS ? "," : "");
    }
    snprintf(doc + n, sizeof doc - n, " ]}\n");
    write_text(c, "manifest.json", doc);
}

static void mark(const struct config *c, const char *status)
{
    char name[64], text[128];
    snprintf(name, sizeof name, "rank%d.status", c->rank);
    snprintf(text, sizeof text, "%s\n", status);
    write_text(c, name, text);
}

static void on_hang(void *arg)
{
    const struct config *c = arg;
    mark(c, "hang");
    fprintf(stderr, "rank %d: no progress for %.1f s: dumped, marked hang\n", c->rank, c->watchdog_s);
}

static int parse(int argc, char **argv, struct config *c)
{
    int i, f;
    memset(c, 0, sizeof *c);
    c->rounds = 2;
    c->ring_capacity = 4096;
    c->watchdog_s = 3.0;
    c->straggle = -1;
    c->fault_core = -1;
    if (argc < 2) {
        return -1;
    }
    c->out = argv[1];
    for (i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--rounds")) c->rounds = atoi(v);
        else if (!strcmp(k, "--ring-capacity")) c->ring_capacity = (uint32_t)atoi(v);
        else if (!strcmp(k, "--watchdog")) c->watchdog_s = atof(v);
        else if (!strcmp(k, "--straggle")) c->straggle = atoi(v);
        else if (!strcmp(k, "--straggle-launch")) c->straggle_launch = atoi(v);
        else if (!strcmp(k, "--straggle-at")) {
            for (f = 0; f < 3 && strcmp(v, STRAGGLE_POINTS[f]); ++f) {
            }
            if (f == 3) return -1;
            c->straggle_at = (enum straggle_point)f;
        }
        else if (!strcmp(k, "--rank")) c->fault_rank = atoi(v);
        else if (!strcmp(k, "--core")) c->fault_core = atoi(v);
        else if (!strcmp(k, "--round")) c->fault_round = atoi(v);
        else if (!strcmp(k, "--token")) c->fault_token = atoi(v);
        else if (!strcmp(k, "--topk")) c->fault_topk = atoi(v);
        else if (!strcmp(k, "--fault")) {
            for (f = 0; f < N_FAULTS && strcmp(v, FAULT_NAMES[f]); ++f) {
            }
            if (f == N_FAULTS) return -1;
            c->fault = (enum fault)f;
        } else return -1;
    }
    return i == argc && c->rounds > 0 && c->ring_capacity > 0 && c->fault_token < B && c->fault_topk < K ? 0 : -1;
}

int main(int argc, char **argv)
{
    static struct config cfg;
    static struct moe m;
    static moetrace_watchdog_t wd;
    pthread_t th[CORES];
    struct core_arg args[CORES];
    char path[4096], status[64];
    int provided = 0, r, g, k, wrong = 0;
    if (parse(argc, argv, &cfg) != 0) {
        fprintf(stderr, "usage: %s OUT [--rounds N] [--ring-capacity C] [--watchdog S] [--straggle R --straggle-at P "
                        "--straggle-launch L] "
                        "[--fault NAME --rank R --core C --round G --token T --topk K]\n", argv[0]);
        return 2;
    }
    if (shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) != 0 || provided != SHMEM_THREAD_MULTIPLE) {
        fprintf(stderr, "SHMEM_THREAD_MULTIPLE not granted\n");
        return 2;
    }
    cfg.rank = shmem_my_pe();
    cfg.ranks = shmem_n_pes();
    if (cfg.ranks > MAX_RANKS) {
        fprintf(stderr, "at most %d PEs\n", MAX_RANKS);
        _exit(2);
    }
    m.cfg = &cfg;
    {
        int64_t S = slots_total(cfg.ranks), P = cfg.ranks;
        int64_t len[N_REGIONS] = {S * H, S * SLOT, S * SLOT, E_L * P * SLOT, B * K * H, B * K * SLOT, P, 1, P};
        for (r = 0; r < N_REGIONS; ++r) {
            m.region_len[r] = len[r];
            m.region[r] = shmem_malloc((size_t)len[r] * sizeof(int32_t));
            for (k = 0; k < len[r]; ++k) {
                m.region[r][k] = r == R_COUNT ? COUNT_INIT : 0; /* the host initialises once; then consumers reset */
            }
        }
    }
    m.rings = calloc(CORES, (size_t)MOETRACE_RING_BYTES(cfg.ring_capacity));
    for (k = 0; k < CORES; ++k) {
        moetrace_ring_init(moetrace_ring_at(m.rings, cfg.ring_capacity, k), cfg.ring_capacity, cfg.rank, k);
    }
    pthread_barrier_init(&m.cores, NULL, CORES);
    if (cfg.rank == 0) {
        write_manifest(&m);
    }
    snprintf(path, sizeof path, "%s/rank%d.mtr", cfg.out, cfg.rank);
    shmem_barrier_all();
    moetrace_watchdog_arm(&wd, m.rings, cfg.ring_capacity, CORES, cfg.watchdog_s, path, on_hang, &cfg);
    for (g = 0; g < cfg.rounds; ++g) { /* one launch per round */
        make_inputs(&m, g);
        for (k = 0; k < CORES; ++k) {
            args[k].m = &m;
            args[k].core = k;
            args[k].launch = g;
            pthread_create(&th[k], NULL, core_main, &args[k]);
        }
        for (k = 0; k < CORES; ++k) {
            pthread_join(th[k], NULL);
        }
        wrong += wrong_rows(&m) + m.total_mismatch;
    }
    moetrace_dump_rings(path, m.rings, cfg.ring_capacity, CORES);
    snprintf(status, sizeof status, wrong ? "wrong %d" : "ok", wrong);
    mark(&cfg, status);
    moetrace_watchdog_finished(&wd);
    shmem_barrier_all();
    _exit(0);
}
