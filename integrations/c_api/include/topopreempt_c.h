/* SPDX-License-Identifier: MIT */
/*
 * topopreempt's stable C interface (ABI version 3): a persistent cluster state that a scheduler
 * updates by events, and preemption plans asked against it, one preemptor at a time or several
 * together. Every engine (a Kubernetes plugin
 * through cgo, a Slurm plugin, a Python binding through ctypes) talks to topopreempt through
 * this header only. Guide: docs/c-api.md.
 *
 * Conventions
 * - Opaque handles (`tp_cluster`, `tp_plan`, `tp_queue`) made by `*_create` / `tp_cluster_plan`
 *   and freed by `*_destroy`. The caller owns what it passes (nothing is kept after a call
 *   returns); the library owns what it returns: strings and arrays read from a `tp_plan` live as
 *   long as the plan, what `tp_queue_get_plans` returns until the next planning call on that
 *   queue or its destruction, and `tp_cluster_last_error` until the next call on that cluster.
 * - Every function that can fail returns a `tp_status`; TP_OK (0) is success. The cluster
 *   keeps a message for its last call ("" after a success) naming the offending item, e.g.
 *   "workload 7: placement entry 2: no domain 'rack0/node9/gpu1'".
 * - No C++ exception ever leaves a function of this header and nothing here aborts the host:
 *   every pointer, index and count is checked (NULL handles give TP_E_NULL), out-of-memory is
 *   TP_E_NO_MEMORY.
 * - Strong guarantee: a call that fails leaves the cluster (and the queue) exactly as it was.
 * - Structs passed by pointer carry `struct_size` first and have an init function that sets it
 *   and every default; always call it before filling fields, so that a later, larger version of
 *   a struct stays compatible. Elements of arrays (`tp_amount`, `tp_placement_entry`,
 *   `tp_victim`, `tp_plan_entry`, `tp_cost_term`) are frozen: growing one means a new type.
 * - Thread-safety: one handle is used by one thread at a time (the caller serialises calls on
 *   it, including reads; a call taking a cluster and a queue uses both); distinct handles are
 *   independent and may be used concurrently.
 *   `tp_abi_version`, `tp_library_version`, `tp_status_name` and the init functions are
 *   thread-safe.
 */
#ifndef TOPOPREEMPT_C_H
#define TOPOPREEMPT_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this header describes. A library answers `tp_abi_version()`; a caller built against
 * version N works with a library of version N or later (a later library accepts the older sizes
 * of the structs that grew, with defaults for the new fields). Version 2 appended
 * `tp_workload.distinct_hosts`; version 3 added the plan status TP_PLAN_UNKNOWN (a caller
 * built against an older header sees an unlisted status: it must treat it as "no plan") and
 * the queue (`tp_queue`, `tp_cluster_plan_queue`: several preemptors planned together). */
#define TP_ABI_VERSION 3

/* Symbol visibility: the shared library exports exactly these functions. */
#if defined(_WIN32) && defined(TOPOPREEMPT_C_SHARED)
#if defined(TOPOPREEMPT_C_BUILDING)
#define TP_API __declspec(dllexport)
#else
#define TP_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) && defined(TOPOPREEMPT_C_BUILDING)
#define TP_API __attribute__((visibility("default")))
#else
#define TP_API
#endif

/* ---- Versions and errors ------------------------------------------------------------------- */

typedef enum tp_status {
  TP_OK = 0,
  TP_E_NULL = 1,      /* a required pointer or handle is NULL */
  TP_E_INVALID = 2,   /* a bad argument: unknown level, negative amount, NaN cost input, a
                         placement over capacity or breaking a guaranteed scope... */
  TP_E_NOT_FOUND = 3, /* unknown workload id or domain */
  TP_E_CONFLICT = 4,  /* duplicate workload id or domain; a plan whose state moved */
  TP_E_STATE = 5,     /* not allowed now (no topology yet, workloads still on a removed node) */
  TP_E_ABI = 6,       /* a struct's struct_size does not match this library (use *_init) */
  TP_E_NO_MEMORY = 7, /* allocation failed; nothing changed */
  TP_E_INTERNAL = 8   /* a library invariant failed (e.g. a plan failed verification) */
} tp_status;

/* TP_ABI_VERSION of the library actually loaded. */
TP_API uint32_t tp_abi_version(void);
/* The topopreempt library version, "MAJOR.MINOR.PATCH". Static storage. */
TP_API const char* tp_library_version(void);
/* "TP_OK", "TP_E_NULL", ...; "unknown" for any other value. Static storage. */
TP_API const char* tp_status_name(tp_status status);

/* ---- The cluster --------------------------------------------------------------------------- */

typedef struct tp_cluster tp_cluster;

/* A new, empty cluster (no topology yet). NULL only when out of memory. */
TP_API tp_cluster* tp_cluster_create(void);
/* Frees the cluster. NULL is a no-op. Plans made from it stay readable. */
TP_API void tp_cluster_destroy(tp_cluster* cluster);
/* The message of the last call on `cluster`: "" after a success. Valid until the next call on
 * it. Never NULL (a NULL cluster gives a static message). */
TP_API const char* tp_cluster_last_error(const tp_cluster* cluster);

/* An amount of one named resource dimension. */
typedef struct tp_amount {
  const char* resource; /* a dimension of the cluster's schema, e.g. "gpu_milli", "cpu_milli" */
  int64_t amount;       /* >= 0 */
} tp_amount;

/* Where a dimension's capacity lives. */
typedef enum tp_resource_kind {
  TP_RESOURCE_DEVICE = 0, /* on device leaves (GPU share, GPU memory) */
  TP_RESOURCE_POOLED = 1  /* on inner domains (CPU, memory of a NUMA node or socket) */
} tp_resource_kind;

typedef struct tp_resource {
  const char* name;
  int32_t kind; /* tp_resource_kind */
} tp_resource;

/* The shape of a topology: its levels root first, which one holds devices (the leaves) and
 * which one is the host (a replica never spans two hosts), and its resource dimensions. */
typedef struct tp_schema {
  size_t struct_size;
  const char* const* levels; /* e.g. {"cluster","zone","rack","node","numa","pcie","gpu"} */
  size_t level_count;        /* 1..64 */
  const char* device_level;  /* e.g. "gpu" */
  const char* host_level;    /* e.g. "node"; must lie above the device level */
  const char* root_name;     /* name of the root domain; NULL: "cluster" */
  const tp_resource* resources;
  size_t resource_count;
} tp_schema;
TP_API void tp_schema_init(tp_schema* schema);

/*
 * Topology. The topology is a tree of domains addressed by *path*: the names from the root's
 * child down, joined by '/', e.g. "zone-a/block1/rack7/node-17/numa0/pci1/gpu3" ("" is the
 * root). Names are non-empty and contain no '/'.
 *
 * Edits (define, add, remove, set_affinity) are *pending* until `tp_cluster_seal`, which
 * builds the topology and re-places every running workload on it, all or nothing. Until then,
 * workload events and plans keep using the last sealed topology. Sealing again after a node
 * joins or leaves rebuilds the topology in O(domains + running placements) and keeps every
 * workload (a scheduler cache mirror calls add/remove as nodes change and seals once per
 * batch). Domain paths are stable across seals; nothing else refers to domain numbers.
 */

/* Starts the topology over with `schema` and no domain but the root. Fails with TP_E_STATE
 * while workloads are running. */
TP_API tp_status tp_cluster_define(tp_cluster* cluster, const tp_schema* schema);

/* Starts the topology over as `machines` copies of a built-in machine shape named node0,
 * node1, ... (rack0, rack1, ... for rack shapes), grouped `per_rack` to a rack under the root
 * "cluster". Shapes: "rtx4090_server" (node > socket > numa > core_group > gpu), "hgx_h100"
 * (node > socket > numa > pcie_switch > gpu), "dense_8gpu_server" (node > socket > pcie_switch >
 * numa > gpu), "gb200_nvl72_rack" (rack > node > socket > gpu). Levels: cluster > rack > the
 * shape's; schema: gpu_milli, gpu_memory_mib (device), cpu_milli, memory_mib (pooled). Pending
 * until sealed. Fails with TP_E_STATE while workloads are running. */
TP_API tp_status tp_cluster_define_shape(tp_cluster* cluster, const char* shape, uint32_t machines,
                                         uint32_t per_rack);

/* Adds the domain `path` at `level`, below its parent (`path` without its last part), which
 * must exist (pending additions count). `capacity` is its own capacity (devices: device
 * dimensions; other domains: pooled ones); NULL with count 0 means none. */
TP_API tp_status tp_cluster_add_domain(tp_cluster* cluster, const char* path, const char* level,
                                       const tp_amount* capacity, size_t capacity_count);

/* Adds a built-in machine shape (see tp_cluster_define_shape) as the domain `path`; the
 * cluster's schema and levels must hold the shape's (as after tp_cluster_define_shape, or a
 * tp_cluster_define with the same resources and those levels). Its affinity matrix comes
 * along. */
TP_API tp_status tp_cluster_add_machine(tp_cluster* cluster, const char* path, const char* shape);

/* Removes the domain `path` and its subtree (pending until sealed; sealing fails with
 * TP_E_STATE while a workload still holds anything there). */
TP_API tp_status tp_cluster_remove_domain(tp_cluster* cluster, const char* path);

/* Device-affinity matrix (e.g. NVLink GB/s; higher is better; ranks best-effort placements) of
 * the host domain `host_path`: `devices` x `devices` values row-major, one row per device of
 * the host in the order they were added; symmetric and finite (checked at seal). */
TP_API tp_status tp_cluster_set_affinity(tp_cluster* cluster, const char* host_path,
                                         const double* matrix, size_t devices);

/* Applies the pending edits: builds the topology and re-places every running workload on it.
 * On failure nothing changes (the edits stay pending, so the caller may fix and seal again).
 * Cost: O(domains + running placements). Forgets every cached decision. */
TP_API tp_status tp_cluster_seal(tp_cluster* cluster);

typedef struct tp_cluster_info {
  size_t struct_size;
  int32_t sealed;         /* 1 once a topology was sealed */
  uint32_t pending_edits; /* edits since the last seal (0: the topology is current) */
  uint64_t generation;    /* incremented by each successful seal */
  size_t domains;         /* domains of the sealed topology */
  size_t hosts;           /* domains at the host level */
  size_t devices;         /* device leaves */
  size_t workloads;       /* running workloads */
  uint64_t state_version; /* a digest of the state's change history: any successful event
                             changes it, a failed call never does (0 before the first seal) */
  size_t cached_deciders; /* incremental deciders kept for repeated questions */
  uint64_t reused_reads;  /* domain reads answered from deciders' caches, in all */
  uint64_t fresh_reads;   /* domain reads done, in all */
} tp_cluster_info;
TP_API void tp_cluster_info_init(tp_cluster_info* info);
TP_API tp_status tp_cluster_get_info(tp_cluster* cluster, tp_cluster_info* info);

/* ---- Workloads ----------------------------------------------------------------------------- */

typedef enum tp_scope_mode {
  TP_SCOPE_NONE = 0,        /* no wish at this scope */
  TP_SCOPE_BEST_EFFORT = 1, /* as tight as possible, never a reason not to start */
  TP_SCOPE_GUARANTEED = 2   /* must hold exactly */
} tp_scope_mode;

/* "Everything of this scope inside one domain of `level`". */
typedef struct tp_scope {
  int32_t mode;      /* tp_scope_mode */
  const char* level; /* a level name; ignored for TP_SCOPE_NONE */
} tp_scope;

/* A workload: a gang of `replicas` identical replicas (a pod: 1; a PodGroup or a multi-node
 * Slurm job: one replica per pod / node). Preempting it frees every replica; an elastic one
 * (min_replicas > 0) may instead be shrunk to min_replicas. */
typedef struct tp_workload {
  size_t struct_size;
  uint64_t id;          /* unique among running workloads and the preemptor */
  const char* name;     /* for messages; may be NULL */
  int32_t priority;     /* larger wins; only strictly lower priorities are victims */
  int32_t preemptible;  /* default 1 */
  int32_t replicas;     /* default 1 */
  int32_t min_replicas; /* 0: not elastic; else 1..replicas */
  /* Per replica: `whole_devices` whole devices (then `demand` names no device dimension), or a
   * share of one device through device dimensions of `demand` (e.g. gpu_milli=500), plus
   * pooled dimensions (cpu_milli, memory_mib). */
  int32_t whole_devices;
  const tp_amount* demand;
  size_t demand_count;
  tp_scope replica_scope; /* e.g. guaranteed "numa": each replica inside one NUMA node */
  tp_scope gang_scope;    /* e.g. guaranteed "rack": all replicas inside one rack */
  /* Cost inputs: finite; the times >= 0. */
  double start_time_s;             /* when it started (any epoch) */
  double seconds_since_checkpoint; /* work lost if evicted now (lost_work) */
  const char* model_id;            /* model held in GPU memory; may be NULL */
  double model_size_gib;           /* its size (reload_time) */
  double extra_cost;               /* caller's additive price, e.g. a PDB or SLO penalty */
  /* ABI 2. Anti-affinity: 1 puts every replica on a different host-level domain (the gang
   * needs `replicas` hosts inside its gang-scope domain); default 0. No effect for one replica;
   * with more, a guaranteed gang scope at the host level or deeper is TP_E_INVALID. A struct
   * of ABI 1's size (ending at extra_cost) is accepted and reads as 0. */
  int32_t distinct_hosts;
} tp_workload;
TP_API void tp_workload_init(tp_workload* workload);

/* One amount a replica holds on one domain. The domain is `path` from the root, or, when
 * `host` is not NULL, `path` below the host-level domain named `host` (host names must then be
 * unique: Kubernetes and Slurm node names are), e.g. host "node-17", path "numa0/pci1/gpu3"; a
 * NULL or "" path is the host itself. */
typedef struct tp_placement_entry {
  uint32_t replica; /* 0..replicas-1 */
  const char* host; /* NULL: `path` is from the root */
  const char* path;
  const tp_amount* amounts; /* NULL with count 0 on a device: the whole device */
  size_t amount_count;
} tp_placement_entry;

/* A workload started with exactly this placement (a bound pod with its devices and cpuset; a
 * Slurm job's GPUs and cores per socket). Checked against the topology and the free capacity:
 * duplicate id, unknown domain, over-capacity, a broken guaranteed scope, entries that do not
 * add up to the demand are refused. */
TP_API tp_status tp_cluster_workload_start(tp_cluster* cluster, const tp_workload* workload,
                                           const tp_placement_entry* entries, size_t entry_count);
/* The workload finished, was deleted or evicted. */
TP_API tp_status tp_cluster_workload_finish(tp_cluster* cluster, uint64_t id);
/* An elastic workload dropped the replicas with these indices (into its current replica list;
 * the survivors keep their order and are renumbered). */
TP_API tp_status tp_cluster_workload_shrink(tp_cluster* cluster, uint64_t id,
                                            const int32_t* replicas, size_t count);
/* Whether `id` is running: 1 yes, 0 no (also for a NULL cluster). */
TP_API int tp_cluster_workload_running(const tp_cluster* cluster, uint64_t id);

/* ---- Plans --------------------------------------------------------------------------------- */

typedef enum tp_solver {
  TP_SOLVER_BRANCH_AND_BOUND = 0, /* exact (default); anytime under node/time limits */
  TP_SOLVER_KNAPSACK = 1,         /* exact per domain when its preconditions hold */
  TP_SOLVER_GREEDY = 2            /* fast, no optimality claim */
} tp_solver;

typedef enum tp_cost_model {
  TP_COST_PRIORITY_WEIGHTED = 0, /* priority + offset per victim (shrink pro rata) */
  TP_COST_VICTIM_COUNT = 1,      /* 1 per victim */
  TP_COST_KUBERNETES_ORDER = 2,  /* Kubernetes' DefaultPreemption order (exact mixed radix) */
  TP_COST_LOST_WORK = 3,         /* GPU-seconds since checkpoint + floor */
  TP_COST_RELOAD_TIME = 4,       /* model_size_gib / bandwidth per replica + floor */
  TP_COST_EXTRA = 5              /* the workload's extra_cost + floor */
} tp_cost_model;

/* One term of the cost: weight x model. Set by tp_cost_term_init to the library's defaults. */
typedef struct tp_cost_term {
  int32_t model;              /* tp_cost_model */
  double weight;              /* >= 0, finite; default 1 */
  double offset;              /* priority_weighted; default 2^31 */
  double floor;               /* lost_work, reload_time, extra; default 1 */
  double bandwidth_gib_per_s; /* reload_time; > 0; default 2 */
  double base;                /* kubernetes_order: 0 (default) = exact mixed radix over the
                                 running workloads; else a whole number >= 2 for base^rank */
} tp_cost_term;
TP_API void tp_cost_term_init(tp_cost_term* term, tp_cost_model model);

#define TP_MAX_COST_TERMS 4

typedef struct tp_plan_options {
  size_t struct_size;
  int32_t solver;           /* tp_solver; default branch_and_bound */
  uint64_t node_limit;      /* branch_and_bound; 0: library default (2,000,000) */
  double time_limit_s;      /* branch_and_bound; 0: library default (10 s). A limit that is
                               hit makes the plan depend on timing (status feasible, or
                               unknown when it stopped the search before a plan or a proof) */
  uint32_t cost_term_count; /* 1..TP_MAX_COST_TERMS; the cost is the weighted sum of the terms */
  tp_cost_term cost[TP_MAX_COST_TERMS]; /* default: one term, priority_weighted */
} tp_plan_options;
TP_API void tp_plan_options_init(tp_plan_options* options);

typedef struct tp_plan tp_plan;

/* Asks what to preempt so that `preemptor` (pending, not running) can start. Read-only on the
 * cluster. Repeated questions for the same preemptor and options reuse the reads of every
 * domain that did not change since (an incremental decider per question, kept across calls,
 * forgotten at seal). Every plan is checked by the library's independent verifier before it
 * is returned. On TP_OK `*plan` is a new plan (free it with tp_plan_destroy); otherwise it is
 * NULL. An infeasible question is TP_OK with status TP_PLAN_INFEASIBLE (proven); one that a
 * limit stopped before a plan or a proof is TP_OK with status TP_PLAN_UNKNOWN. */
TP_API tp_status tp_cluster_plan(tp_cluster* cluster, const tp_workload* preemptor,
                                 const tp_plan_options* options, tp_plan** plan);

/* Applies `plan` to the cluster all or nothing: evicts and shrinks its victims and starts its
 * preemptor at its placement. TP_E_CONFLICT, nothing changed, when something the plan relies on
 * moved since it was made (the message names the domains); TP_E_STATE for a plan of another
 * cluster or of a topology since resealed; TP_E_INVALID for an infeasible or unknown plan. */
TP_API tp_status tp_cluster_commit(tp_cluster* cluster, const tp_plan* plan);

TP_API void tp_plan_destroy(tp_plan* plan);

typedef enum tp_plan_status {
  TP_PLAN_OPTIMAL = 0,             /* victims, proven minimum cost */
  TP_PLAN_FEASIBLE = 1,            /* victims; a limit was hit or the solver claims nothing */
  TP_PLAN_INFEASIBLE = 2,           /* proven: no placement even after evicting every eligible
                                       victim */
  TP_PLAN_NO_PREEMPTION_NEEDED = 3, /* it fits as things stand (placement given) */
  TP_PLAN_UNKNOWN = 4 /* a limit stopped the search before a plan or a proof: nothing claimed,
                         no victims, no placement (a host answers as it would without us) */
} tp_plan_status;

typedef struct tp_plan_info {
  size_t struct_size;
  int32_t status;           /* tp_plan_status */
  uint64_t preemptor;       /* the preemptor's id */
  double cost;              /* total victim cost */
  double lower_bound;       /* best proven lower bound */
  double gap;               /* (cost - lower_bound) / cost; 0 when proven */
  const char* solver;       /* "branch_and_bound", ... */
  const char* cost_model;   /* "priority_weighted", "weighted_sum", ... */
  const char* target;       /* path of the domain it lands in ("" root, or none) */
  const char* target_level; /* its level ("" when infeasible) */
  const char* target_host;  /* its host's name when it lies at or below a host, else "" */
  size_t victim_count;
  size_t entry_count; /* placement entries, all replicas */
  int32_t replicas;
  const char* explanation; /* readable: why these victims, why other domains lost */
  uint64_t domains_considered;
  uint64_t domains_solved;
  uint64_t nodes_explored;
  int32_t limit_reached;
  double seconds;
  uint64_t generation; /* the cluster's topology generation it was made on */
} tp_plan_info;
TP_API void tp_plan_info_init(tp_plan_info* info);
TP_API tp_status tp_plan_get_info(const tp_plan* plan, tp_plan_info* info);

typedef enum tp_victim_action {
  TP_VICTIM_EVICT = 0, /* the whole gang goes */
  TP_VICTIM_SHRINK = 1 /* an elastic workload drops `dropped_replicas` */
} tp_victim_action;

typedef struct tp_victim {
  uint64_t id;
  int32_t action; /* tp_victim_action */
  size_t dropped_count;
  const int32_t* dropped_replicas; /* replica indices, for a shrink */
  double cost;                     /* its share of the plan's cost */
  const char* reason;
} tp_victim;

/* The victims, sorted by id. Arrays and strings live as long as the plan. */
TP_API tp_status tp_plan_get_victims(const tp_plan* plan, const tp_victim** victims, size_t* count);

/* One entry of the preemptor's placement. */
typedef struct tp_plan_entry {
  uint32_t replica;
  const char* path;      /* from the root, e.g. "rack0/node3/numa1/gpu5" */
  const char* host;      /* the host's name, e.g. "node3" */
  const char* host_path; /* below the host, e.g. "numa1/gpu5" ("" the host itself) */
  const char* level;     /* the domain's level */
  int32_t is_device;     /* 1 for a device leaf */
  uint32_t device_index; /* position among its host's devices (pre-order), for devices */
  const tp_amount* amounts;
  size_t amount_count; /* the non-zero amounts taken */
} tp_plan_entry;

/* The placement, replica by replica (empty when infeasible). */
TP_API tp_status tp_plan_get_placement(const tp_plan* plan, const tp_plan_entry** entries,
                                       size_t* count);

/* ---- Several preemptors together ---------------------------------------------------------- */

/*
 * Preemptors pending at the same time are planned together so that no two count on the same
 * room: in priority order (highest first, ties by ascending id), each on the state where the
 * plans of those before it are already applied. A later preemptor may use what an earlier one's
 * victims free and the earlier one leaves free; it never picks an earlier one's room, nor an
 * earlier preemptor as a victim.
 *
 * A queue remembers each preemptor's last plan with a placement (its *nomination*, like
 * Kubernetes' nominatedNodeName) from one call to the next, so that evictions already under
 * way are not wasted by a change of mind: a nomination whose dependencies did not move is kept
 * as is; one whose victims partly left but whose placement still holds is resumed without them;
 * otherwise the preemptor is planned again. Nominations of preemptors no longer listed are
 * dropped. A queue belongs to the first cluster it is used with; it forgets every nomination
 * when that cluster is sealed again (domain numbers change) or when the options differ from the
 * last call's (for TP_COST_KUBERNETES_ORDER, which prices victims by the running workloads'
 * priorities, also when those changed), since a kept plan must be exact under the cost it is
 * judged by. The preemptors then read `TP_NOMINATION_PLANNED`.
 */
typedef struct tp_queue tp_queue;

/* A new queue with no nomination. NULL only when out of memory. */
TP_API tp_queue* tp_queue_create(void);
/* Frees the queue and every plan it returned. NULL is a no-op. */
TP_API void tp_queue_destroy(tp_queue* queue);

/* What the queue did for one preemptor. Values are never renumbered; new ones are appended. */
typedef enum tp_nomination_status {
  TP_NOMINATION_KEPT = 0,       /* its nomination is still current: reused as is */
  TP_NOMINATION_RESUMED = 1,    /* some victims already left; the rest of the nomination, at the
                                   same placement, still applies: kept without them */
  TP_NOMINATION_PLANNED = 2,    /* no nomination: planned afresh */
  TP_NOMINATION_REPLANNED = 3,  /* its nomination no longer applied (`moved` says where), or
                                   its request changed: planned afresh */
  TP_NOMINATION_INFEASIBLE = 4, /* no plan on the state the preemptors before it leave */
  TP_NOMINATION_REJECTED = 5,   /* listed twice (the later one), already running, or its solve
                                   failed: nothing planned or applied for it (`error` says why) */
  TP_NOMINATION_UNKNOWN = 6     /* a limit stopped its search before a plan or a proof: nothing
                                   planned (answer as without topopreempt) */
} tp_nomination_status;

/* One preemptor's outcome. */
typedef struct tp_queued_plan {
  uint64_t preemptor;   /* its id */
  int32_t status;       /* tp_nomination_status */
  const tp_plan* plan;  /* its plan, read with tp_plan_get_*: made on (and verified against) the
                           state the plans before it leave, so committing the plans in this
                           order lands them all while nothing else moves (tp_cluster_commit).
                           Owned by the queue: never pass it to tp_plan_destroy. For
                           TP_NOMINATION_REJECTED an infeasible plan whose explanation says why */
  const char* error;    /* why it was rejected; "" otherwise */
  const char* const* moved; /* resumed or replanned: paths of the domains its old nomination
                               depended on that changed (none when its request changed) */
  size_t moved_count;
} tp_queued_plan;

/* Plans for the `count` pending preemptors `preemptors[0..count)` together (see above), under
 * one `options` for all, with `queue`'s nominations, and replaces them with the new plans'
 * placements. Read-only on the cluster. Each preemptor is checked as in tp_cluster_plan: a bad
 * one (NULL, wrong struct_size, unknown level, NaN cost input, ...) fails the call, naming its
 * index and id, and nothing changes. One already running or listed twice is not an error: it
 * ends TP_NOMINATION_REJECTED and the others are planned as if it were not there. Every plan
 * is checked by the library's independent verifier on the state it was made on (failure:
 * TP_E_INTERNAL). Errors are the cluster's (tp_cluster_last_error); TP_E_STATE for a queue of
 * another cluster. On TP_OK the previous results of `queue` are freed and the new ones are read
 * with tp_queue_get_plans; on failure the queue keeps its nominations and results.
 * Cost: one copy of the state, a solve per preemptor whose nomination is not kept (no decider
 * cache: every solve is cold), a dry run per kept nomination, and a verification per plan. */
TP_API tp_status tp_cluster_plan_queue(tp_cluster* cluster, tp_queue* queue,
                                       const tp_workload* const* preemptors, size_t count,
                                       const tp_plan_options* options);

/* The outcomes of the last successful tp_cluster_plan_queue on `queue`, in planning order
 * (priority descending, then id); none before the first. Valid until the next planning call on
 * the queue or its destruction. */
TP_API tp_status tp_queue_get_plans(const tp_queue* queue, const tp_queued_plan** plans,
                                    size_t* count);

/* How many nominations the queue holds (0 for NULL). */
TP_API size_t tp_queue_nomination_count(const tp_queue* queue);

#ifdef __cplusplus
}
#endif

#endif /* TOPOPREEMPT_C_H */
