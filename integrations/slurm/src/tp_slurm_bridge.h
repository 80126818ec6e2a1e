/* SPDX-License-Identifier: MIT */
/*
 * Plain-data interface between the Slurm side of the preempt/topopreempt plugin (C, compiled
 * against Slurm's internal headers, which do not compile as C++) and the planner (C++20, built
 * on the topopreempt library). Nothing here refers to a Slurm type, so both sides include it.
 *
 * Thread-safety: slurmctld calls the preempt plugin with its job write lock held, so every
 * function here runs on one thread at a time; the engine is not safe for concurrent calls.
 */
#ifndef TOPOPREEMPT_SLURM_BRIDGE_H
#define TOPOPREEMPT_SLURM_BRIDGE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TP_MAX_SOCKETS 8 /* sockets per node the snapshot describes */
#define TP_MAX_GPUS 64   /* GPUs per node (one bit each in a uint64_t) */

/* A switch of topology/tree. `level` is Slurm's (0 = leaf switch); `parent` indexes the
 * switch array, or -1 for a top switch. */
typedef struct {
  const char* name;
  int level;
  int parent;
} tp_switch_t;

/* A node: its leaf switch (-1: none), sockets x cores, and its GPUs (gres/gpu with File=),
 * each attached to the socket whose cores gres.conf binds it to (-1: no single socket). */
typedef struct {
  const char* name;
  int leaf_switch;
  int sockets;
  int cores_per_socket;
  int gpus;
  int gpu_socket[TP_MAX_GPUS];
  int64_t memory_mb; /* RealMemory - MemSpecLimit; read only when the snapshot models memory */
} tp_node_t;

/* What one running job holds on one node: exact GPU indexes, cores per socket and memory. An
 * --exclusive job holds its whole node (every GPU, core and megabyte). */
typedef struct {
  int node;
  uint64_t gpu_mask;
  int cores_on_socket[TP_MAX_SOCKETS];
  int64_t memory_mb;
} tp_holding_t;

/* A running job. Its holdings are `holdings[first_holding .. first_holding + holding_count)`. */
typedef struct {
  uint32_t job_id;
  const char* name;
  const char* partition;
  int priority;      /* partition PriorityTier */
  int preemptible;   /* PreemptMode of its partition is CANCEL or REQUEUE, not a hetjob */
  double start_time; /* seconds since the epoch */
  int first_holding;
  int holding_count;
} tp_job_t;

/* The cluster as slurmctld sees it at one moment. */
typedef struct {
  const tp_switch_t* switches;
  int switch_count;
  const tp_node_t* nodes;
  int node_count;
  const tp_job_t* jobs;
  int job_count;
  const tp_holding_t* holdings;
  int holding_count;
  double now;          /* seconds since the epoch */
  int memory_modelled; /* SelectTypeParameters has CR_Memory: memory is a per-node resource */
} tp_snapshot_t;

/* Where a pending job must land, translated from its Slurm options. */
typedef enum {
  TP_SCOPE_NONE = 0,   /* anywhere on its nodes */
  TP_SCOPE_SOCKET = 1, /* --gpus-per-socket=N --sockets-per-node=1: each node's share on 1 socket */
} tp_replica_scope_t;

typedef struct {
  uint32_t job_id;
  const char* name;
  int priority;       /* partition PriorityTier */
  int nodes;          /* exact node count (min_nodes == max_nodes) */
  int gpus_per_node;  /* whole GPUs on each node */
  int cores_per_node; /* cores on each node (one CPU = one core; threads are not modelled) */
  tp_replica_scope_t replica_scope;
  int one_switch;        /* --switches=1: all nodes under one leaf switch */
  int exclusive;         /* --exclusive: each node whole (no other job may stay on it) */
  int64_t memory_per_node_mb; /* when the snapshot models memory */
  /* Nodes the job may use (partition, -w, -x, backfill's exclusions, --constraint,
   * reservations, DOWN/DRAIN), one flag per snapshot node; NULL: every node. */
  const unsigned char* eligible;
  int exc_node_bitmap; /* Slurm's exc_node_bitmap was set (-x, or backfill's _start_job); logged */
} tp_request_t;

typedef enum {
  TP_PLAN_NONE = 0,    /* no plan: answer as preempt/partition_prio does */
  TP_PLAN_VICTIMS = 1, /* preempt exactly the victims, in rank order */
} tp_plan_kind_t;

typedef void (*tp_log_fn)(int severity /* 0 debug, 1 info, 2 error */, const char* message);

typedef struct tp_engine tp_engine_t;

/* Reads the configuration file (NULL or missing file: defaults). Never throws; returns NULL and
 * logs through `log` on a malformed file. */
tp_engine_t* tp_engine_create(const char* config_path, tp_log_fn log);
void tp_engine_destroy(tp_engine_t* engine);

/* Makes the cached plan of `request`'s job current if it was made for the same request on the
 * state `fingerprint` (the caller's hash of what it would read) and returns its kind; else
 * returns -1 and the caller reads the cluster and calls tp_engine_plan. Plans are cached per job, so a
 * scheduler pass that alternates between pending jobs solves each of them once per state.
 * A verdict without victims (infeasible, unknown, fits as is) is kept longer, across state
 * changes: tp_engine_plan answers it again, without solving, while nothing on the nodes the
 * request may use has changed. */
int tp_engine_use_cached(tp_engine_t* engine, const tp_request_t* request, int node_count,
                         uint64_t fingerprint);

/* Plans for `request` on `snapshot`, checks the plan against every constraint Slurm's
 * select/cons_tres enforces that the snapshot describes (the job must start once the victims
 * are gone), caches it, and makes it current. A plan is imposed (TP_PLAN_VICTIMS) only when
 * it is valid, verified and passes that check; otherwise the answer is TP_PLAN_NONE (stock).
 * Never throws: every error is logged and yields TP_PLAN_NONE. */
tp_plan_kind_t tp_engine_plan(tp_engine_t* engine, const tp_snapshot_t* snapshot,
                              const tp_request_t* request, uint64_t fingerprint);

/* Says which scheduling cycle the following calls belong to (any value that differs between
 * cycles; the plugin derives it from the calling thread and sdiag's cycle counters). The time
 * tp_engine_plan spends planning is charged to the current cycle; once a cycle has spent
 * topopreempt.conf's `cycle_budget_ms`, its remaining jobs get TP_PLAN_NONE (stock), each told
 * once, and are planned in a later cycle. A search started with less than its time limit left
 * in the budget is cut to what is left. */
void tp_engine_set_cycle(tp_engine_t* engine, uint64_t cycle);

/* 1 when topopreempt.conf says `relation = qos` (who may preempt whom comes from QOS Preempt=,
 * as preempt/qos decides), 0 for `relation = partition_prio` (the default). */
int tp_engine_relation_is_qos(const tp_engine_t* engine);

/* Rank (0 = first) of `job_id` among the victims of the current plan, or -1. */
int tp_engine_victim_rank(const tp_engine_t* engine, uint32_t job_id);

/* Logs at info level that `job_id` gets stock behaviour and why, once per job and reason
 * (a scheduler asks about a pending job in every pass). */
void tp_engine_tell_stock(tp_engine_t* engine, uint32_t job_id, const char* reason);

#ifdef __cplusplus
}
#endif

#endif /* TOPOPREEMPT_SLURM_BRIDGE_H */
