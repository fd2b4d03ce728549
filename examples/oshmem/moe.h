/*
 * moe.h - the classic MoE dispatch/combine on OpenSHMEM: shapes, symmetric
 * regions, faults, and what host.c and kernels.c share.
 *
 * Shapes (small on purpose: every event of a run fits the stored test traces):
 * P ranks (PEs), CORES pthreads per PE standing in for the AIV cores of one
 * rank, B tokens per rank, top-K, E_L local experts, H words of hidden.
 */
#ifndef MOE_OSHMEM_H
#define MOE_OSHMEM_H

#include <pthread.h>
#include <stdint.h>

#define CORES 2
#define B 4
#define K 2
#define E_L 2
#define H 4
#define SLOT 8          /* ready / assist / count / status entries are 8 int32 words (32 B) */
#define MAX_RANKS 16
#define COUNT_INIT (-1) /* an unannounced count slot */
#define STRAGGLE_US 200000 /* a straggler's pause */

/* Regions: the manifest's `regions` in this order; an event names a region by its index. */
enum region {
    R_PAYLOAD,  /* slots * H: dispatch payload, slot = (src_rank*E_L + local_expert)*(B*K) + i */
    R_ASSIST,   /* slots * SLOT: [src_rank, token, topk] of each payload slot */
    R_READY,    /* slots * SLOT: all 8 words 1 when the payload slot landed; the consumer resets to 0 */
    R_COUNT,    /* E_L*P * SLOT: {1, n, 0...} per segment local_expert*P + src_rank; reset to -1 */
    R_CDATA,    /* B*K * H: combine results, slot = token*K + topk on the token owner */
    R_CSTATUS,  /* B*K * SLOT: all 8 words 1 when the result landed; the owner resets to 0 */
    R_GEN,      /* P: generation barrier, word s written by rank s with the generation k */
    R_TOTAL,    /* 1: rows announced to this rank, summed by shmem atomic adds */
    R_DONE,     /* P: word s set to 1 by rank s once its atomic add is complete */
    N_REGIONS
};

enum kernel_name { NAME_DISPATCH, NAME_COMBINE, N_NAMES };

enum fault {
    F_NONE,
    F_INVALID_EXPERT,   /* one (token, topk) of --rank in --round routes to expert num_experts */
    F_STATUS_NOT_RESET, /* --rank --core does not reset its combine status slots in --round */
    F_COUNT_NOT_RESET,  /* --rank's consumer does not reset its count slots in --round */
    F_READY_OFF,        /* --rank --core writes one segment's ready flags one slot off in --round */
    F_PE_KILLED,        /* --rank is killed (SIGKILL) after its first payload put in --round */
    F_GEN_EQ,           /* --rank waits the generation barrier with == (run it with --straggle RANK) */
    F_MISSING_QUIET,    /* --rank --core leaves out the quiet between payload puts and the ready flags */
    F_AMO_BEFORE_QUIET, /* --rank --core signals done before quieting its atomic add */
    N_FAULTS
};

struct config {
    int rank, ranks, rounds;
    /* Timing, not a bug: rank `straggle` (-1: none) pauses in launch `straggle_launch` at one point, so a
     * race the fault opens is lost the same way every run. */
    int straggle, straggle_launch;
    enum straggle_point { AT_GENERATION, AT_DISPATCH, AT_COMBINE } straggle_at;
    uint32_t ring_capacity;
    double watchdog_s;
    enum fault fault;
    int fault_rank, fault_core, fault_round, fault_token, fault_topk;
    const char *out; /* directory for manifest.json, rankR.mtr and rankR.status */
};

/* Symmetric memory (one shmem_malloc per region) and one rank's private state. */
struct moe {
    const struct config *cfg;
    int32_t *region[N_REGIONS];
    int64_t region_len[N_REGIONS];
    uint8_t *rings; /* CORES rings laid out by moetrace_ring_at */
    pthread_barrier_t cores;
    /* The launch's inputs (the router's output) and what the rank computed. */
    int32_t x[B][H];
    int32_t expert_ids[B][K];
    int32_t scales[B][K];
    int64_t out[B][H];
    /* Written by core 0 in dispatch, read by every core in combine. */
    int32_t ep_recv_count[E_L * MAX_RANKS];
    int32_t expand_y[MAX_RANKS * B * K][H];
    int32_t expand_assist[MAX_RANKS * B * K][3];
    int total_mismatch; /* the atomic row total disagreed with the announced counts */
};

int64_t slots_total(int ranks);
int fault_here(const struct moe *m, enum fault f, int core, int launch);
void straggle(const struct moe *m, enum straggle_point at, int launch);
void make_inputs(struct moe *m, int launch);
int32_t expert_fn(int32_t x, int32_t expert);
void *core_main(void *arg); /* one launch on one core: dispatch, then combine */

struct core_arg {
    struct moe *m;
    int core, launch;
};

#endif
