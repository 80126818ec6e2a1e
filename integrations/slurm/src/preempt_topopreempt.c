/* SPDX-License-Identifier: MIT */
/*
 * preempt/topopreempt: a Slurm 22.05 preempt plugin whose victims are topopreempt's plan.
 *
 * Slurm asks a preempt plugin, pair by pair, whether a pending job may preempt a running one
 * (preempt_p_preemptable), then sorts the candidates by PREEMPT_DATA_PRIO; select/cons_tres
 * removes them in that order until the pending job fits. We read the cluster (nodes, sockets,
 * cores, GPUs with their indexes, switches, running jobs and exactly what they hold) into the
 * plain data of tp_slurm_bridge.h, let the C++ planner compute and verify a minimum-cost plan
 * once per (preemptor, state), and then call preemptable exactly the plan's victims, ranked
 * first. Whenever no plan applies (an option we cannot model, a plan the job could not start
 * on, an error) we answer as preempt/partition_prio does, so the plugin never makes Slurm worse
 * than stock.
 *
 * This file reads slurmctld's internal structures, so it must be compiled against the headers
 * of the exact Slurm source the running slurmctld was built from (build-plugin.sh does).
 */
/* Slurm's config.h must come first (it sets feature macros the headers depend on), and
 * clang-format would move Slurm's preempt.h above it as this file's "main" header. */
// clang-format off
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/bitstring.h"
#include "src/common/gres.h"
#include "src/common/job_resources.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/slurm_topology.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/node_scheduler.h"
#include "src/slurmctld/preempt.h"
#include "src/slurmctld/reservation.h"
#include "src/slurmctld/slurmctld.h"
#include "tp_slurm_bridge.h"
// clang-format on

const char plugin_name[] = "Topology-aware preemption (topopreempt) plugin";
const char plugin_type[] = "preempt/topopreempt";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/*
 * preempt_p_preemptable runs inside list_for_each(job_list, ...), which holds job_list's own
 * lock, so any list_* call on job_list from here would deadlock. The only way to read the
 * other jobs is to walk the list's nodes ourselves (the lock we would need is already held by
 * our own thread, and slurmctld's job write lock is held too). The list's private layout
 * is copied verbatim from src/common/list.c of the same source tree by build-plugin.sh.
 */
#include "tp_list_layout.h" /* generated from src/common/list.c by build-plugin.sh */
#define TP_LIST_MAGIC 0xDEADBEEF

static tp_engine_t* engine = NULL;

/* The plan in force: for which preemptor (pointer and id). The engine caches plans per job. */
static job_record_t* plan_preemptor = NULL;
static uint32_t plan_preemptor_id = 0;
static tp_plan_kind_t plan_kind = TP_PLAN_NONE;

/* Why a job gets stock behaviour; logged once per job and reason at info level. */
static void _stock(job_record_t* job_ptr, const char* reason) {
  if (engine) tp_engine_tell_stock(engine, job_ptr->job_id, reason);
}

static bool _memory_modelled(void) { return (slurm_conf.select_type_param & CR_MEMORY) != 0; }

/* --exclusive (share_res 0 or whole_node WHOLE_NODE_REQUIRED): the job owns its nodes. */
static bool _exclusive(job_record_t* job_ptr) {
  return job_ptr->details &&
         ((job_ptr->details->share_res == 0) || (job_ptr->details->whole_node == WHOLE_NODE_REQUIRED));
}

static void _log(int severity, const char* message) {
  if (severity >= 2)
    error("%s: %s", plugin_type, message);
  else if (severity == 1)
    info("%s: %s", plugin_type, message);
  else
    debug("%s: %s", plugin_type, message);
}

/* ---- stock behaviour: exactly preempt/partition_prio's (or, with `relation = qos`,
 * preempt/qos's) answers ------------------------------------------------------------------ */

/* topopreempt.conf `relation = qos`: who may preempt whom comes from QOS Preempt=. */
static bool use_qos = false;

static uint16_t _qos_preempt_mode(job_record_t* job_ptr) {
  uint16_t mode = (job_ptr->qos_ptr && job_ptr->qos_ptr->preempt_mode) ? job_ptr->qos_ptr->preempt_mode
                                                                        : slurm_conf.preempt_mode;
  return mode & ~PREEMPT_MODE_GANG & ~PREEMPT_MODE_WITHIN;
}

/* preempt/qos's preemptable: the preemptor's QOS lists the preemptee's (or, within one QOS,
 * PreemptMode=WITHIN and a higher job priority). */
static bool _qos_preemptable(job_record_t* preemptee, job_record_t* preemptor) {
  slurmdb_qos_rec_t* qos_ee = preemptee->qos_ptr;
  slurmdb_qos_rec_t* qos_or = preemptor->qos_ptr;

  if (!qos_ee || !qos_or) return false;
  if (qos_or->id == qos_ee->id) {
    if ((qos_or->preempt_mode & PREEMPT_MODE_WITHIN) || (slurm_conf.preempt_mode & PREEMPT_MODE_WITHIN))
      return preemptor->priority > preemptee->priority;
    return false;
  }
  return qos_or->preempt_bitstr && bit_test(qos_or->preempt_bitstr, qos_ee->id);
}

static uint32_t _qos_prio(job_record_t* job_ptr) {
  uint32_t prio = 0;

  if (job_ptr->qos_ptr)
    prio = (job_ptr->qos_ptr->priority >= 0xffff) ? (0xffffU << 16) : (job_ptr->qos_ptr->priority << 16);
  return prio + ((job_ptr->node_cnt >= 0xffff) ? 0xffff : job_ptr->node_cnt);
}

static uint16_t _job_preempt_mode(job_record_t* job_ptr) {
  part_record_t* part_ptr = job_ptr->part_ptr;

  if (use_qos) return _qos_preempt_mode(job_ptr);
  if (part_ptr && (part_ptr->preempt_mode != NO_VAL16))
    return (part_ptr->preempt_mode & (~PREEMPT_MODE_GANG));
  return (slurm_conf.preempt_mode & (~PREEMPT_MODE_GANG));
}

static uint32_t _stock_prio(job_record_t* job_ptr) {
  if (use_qos) return _qos_prio(job_ptr);
  uint32_t job_prio = job_ptr->part_ptr ? (job_ptr->part_ptr->priority_tier << 16) : 0;

  return job_prio + ((job_ptr->node_cnt >= 0xffff) ? 0xffff : job_ptr->node_cnt);
}

static bool _stock_preemptable(job_record_t* preemptee, job_record_t* preemptor) {
  if (use_qos) return _qos_preemptable(preemptee, preemptor);
  if (!preemptee->part_ptr || !preemptor->part_ptr ||
      (preemptee->part_ptr->priority_tier >= preemptor->part_ptr->priority_tier) ||
      (preemptee->part_ptr->preempt_mode == PREEMPT_MODE_OFF))
    return false;
  return true;
}

/* ---- reading slurmctld's state ------------------------------------------------------------ */

static struct listNode* _job_list_head(void) {
  struct xlist* list = (struct xlist*)job_list;

  if (!list || (list->magic != TP_LIST_MAGIC)) return NULL;
  return list->head;
}

static bool _holds_resources(job_record_t* job_ptr) {
  return (IS_JOB_RUNNING(job_ptr) || IS_JOB_SUSPENDED(job_ptr)) && job_ptr->job_resrcs &&
         job_ptr->job_resrcs->node_bitmap;
}

/* One word into a running hash: a bijective step (xor, then an odd multiplier), so two states
 * that differ in one word always hash apart. A word at a time: the walk runs for every pending
 * preemptor at every state change, under the job write lock. */
static uint64_t _mix(uint64_t hash, uint64_t value) {
  return (hash ^ value) * 0x9e3779b97f4a7c15ULL;
}

/* Identifies the state a plan depends on, and everything the snapshot reads or borrows: every
 * job holding resources (what it is, where its records and strings are, its partition's and
 * QOS's tier and preemption mode), and the node, switch and partition tables (reconfiguration,
 * node and partition updates move last_node_update and last_part_update). While it is
 * unchanged, the snapshot read for one preemptor serves the next (_snapshot_for). */
static uint64_t _fingerprint(void) {
  uint64_t hash = 0xcbf29ce484222325ULL;

  for (struct listNode* p = _job_list_head(); p; p = p->next) {
    job_record_t* job_ptr = p->data;
    part_record_t* part_ptr;
    slurmdb_qos_rec_t* qos_ptr;

    if (!job_ptr || !_holds_resources(job_ptr)) continue;
    part_ptr = job_ptr->part_ptr;
    qos_ptr = job_ptr->qos_ptr;
    hash = _mix(hash, job_ptr->job_id);
    hash = _mix(hash, job_ptr->job_state);
    hash = _mix(hash, (uint64_t)job_ptr->start_time);
    hash = _mix(hash, job_ptr->node_cnt);
    hash = _mix(hash, job_ptr->het_job_id);
    hash = _mix(hash, (uintptr_t)job_ptr);
    hash = _mix(hash, (uintptr_t)job_ptr->name);
    hash = _mix(hash, (uintptr_t)job_ptr->job_resrcs);
    hash = _mix(hash, (uintptr_t)job_ptr->gres_list_alloc);
    hash = _mix(hash, (uintptr_t)job_ptr->details);
    hash = _mix(hash, _exclusive(job_ptr));
    hash = _mix(hash, (uintptr_t)part_ptr);
    if (part_ptr) hash = _mix(_mix(hash, part_ptr->priority_tier), part_ptr->preempt_mode);
    hash = _mix(hash, (uintptr_t)qos_ptr);
    if (qos_ptr) hash = _mix(_mix(hash, qos_ptr->priority), qos_ptr->preempt_mode);
  }
  hash = _mix(hash, (uint64_t)last_node_update);
  hash = _mix(hash, (uint64_t)last_part_update);
  hash = _mix(hash, (uint64_t)node_record_count);
  hash = _mix(hash, (uintptr_t)node_record_table_ptr);
  hash = _mix(hash, (uint64_t)switch_record_cnt);
  hash = _mix(hash, (uintptr_t)switch_record_table);
  hash = _mix(hash, slurm_conf.preempt_mode);
  hash = _mix(hash, slurm_conf.select_type_param);
  return hash;
}

static gres_state_t* _find_gpu_gres(List gres_list) {
  ListIterator iter;
  gres_state_t *gres_state, *found = NULL;

  if (!gres_list) return NULL;
  iter = list_iterator_create(gres_list);
  while ((gres_state = list_next(iter))) {
    if (!xstrcmp(gres_state->gres_name, "gpu")) {
      found = gres_state;
      break;
    }
  }
  list_iterator_destroy(iter);
  return found;
}

typedef struct {
  tp_switch_t* switches;
  int switch_count;
  tp_node_t* nodes;
  int node_count;
  tp_job_t* jobs;
  job_record_t** job_ptrs; /* the record each of `jobs` was read from */
  int job_count;
  int job_capacity;
  tp_holding_t* holdings;
  int holding_count;
  int holding_capacity;
} snapshot_buffers_t;

static void _free_buffers(snapshot_buffers_t* b) {
  xfree(b->switches);
  xfree(b->nodes);
  xfree(b->jobs);
  xfree(b->job_ptrs);
  xfree(b->holdings);
}

static void _read_switches(snapshot_buffers_t* b) {
  b->switch_count = switch_record_cnt;
  b->switches = xcalloc(switch_record_cnt + 1, sizeof(tp_switch_t));
  for (int s = 0; s < switch_record_cnt; s++) {
    b->switches[s].name = switch_record_table[s].name;
    b->switches[s].level = switch_record_table[s].level;
    b->switches[s].parent = -1;
  }
  /* Parents from the child lists: a top switch's own parent field is not set by tree. */
  for (int s = 0; s < switch_record_cnt; s++) {
    for (int c = 0; c < switch_record_table[s].num_switches; c++) {
      int child = switch_record_table[s].switch_index[c];
      if ((child >= 0) && (child < switch_record_cnt)) b->switches[child].parent = s;
    }
  }
}

/* The socket all of gres.conf's Cores= for one GPU lie on, or -1. */
static int _socket_of_cores(bitstr_t* cores, int cores_per_socket) {
  int socket = -1;

  if (!cores || (cores_per_socket <= 0)) return -1;
  for (bitoff_t c = 0; c < bit_size(cores); c++) {
    if (!bit_test(cores, c)) continue;
    if (socket == -1)
      socket = c / cores_per_socket;
    else if (socket != c / cores_per_socket)
      return -1;
  }
  return socket;
}

static int _read_nodes(snapshot_buffers_t* b) {
  b->node_count = node_record_count;
  b->nodes = xcalloc(node_record_count + 1, sizeof(tp_node_t));
  for (int i = 0; i < node_record_count; i++) {
    node_record_t* node_ptr = node_record_table_ptr[i];
    tp_node_t* node = &b->nodes[i];
    gres_state_t* gpu;
    gres_node_state_t* gpu_state;

    node->leaf_switch = -1;
    if (!node_ptr) { /* a removed dynamic node: no capacity */
      node->name = "";
      continue;
    }
    node->name = node_ptr->name;
    node->memory_mb = (int64_t)node_ptr->real_memory - (int64_t)node_ptr->mem_spec_limit;
    node->sockets = node_ptr->tot_sockets;
    node->cores_per_socket = node_ptr->cores;
    if (node->sockets > TP_MAX_SOCKETS) {
      error("%s: node %s has %d sockets, more than %d", plugin_type, node_ptr->name, node->sockets,
            TP_MAX_SOCKETS);
      return -1;
    }
    for (int s = 0; s < switch_record_cnt; s++) {
      if ((switch_record_table[s].level == 0) && switch_record_table[s].node_bitmap &&
          bit_test(switch_record_table[s].node_bitmap, i)) {
        node->leaf_switch = s;
        break;
      }
    }
    gpu = _find_gpu_gres(node_ptr->gres_list);
    if (!gpu || !gpu->gres_data) continue;
    gpu_state = gpu->gres_data;
    if (gpu_state->gres_cnt_avail > TP_MAX_GPUS) {
      error("%s: node %s has %" PRIu64 " GPUs, more than %d", plugin_type, node_ptr->name,
            gpu_state->gres_cnt_avail, TP_MAX_GPUS);
      return -1;
    }
    node->gpus = gpu_state->gres_cnt_avail;
    for (int g = 0; g < node->gpus; g++) node->gpu_socket[g] = -1;
    for (int t = 0; t < gpu_state->topo_cnt; t++) {
      bitstr_t* gpus = gpu_state->topo_gres_bitmap ? gpu_state->topo_gres_bitmap[t] : NULL;
      int socket =
          _socket_of_cores(gpu_state->topo_core_bitmap ? gpu_state->topo_core_bitmap[t] : NULL,
                           node->cores_per_socket);
      if (!gpus) continue;
      for (int g = 0; (g < node->gpus) && (g < bit_size(gpus)); g++) {
        if (bit_test(gpus, g)) node->gpu_socket[g] = socket;
      }
    }
  }
  return 0;
}

static tp_holding_t* _new_holding(snapshot_buffers_t* b) {
  if (b->holding_count == b->holding_capacity) {
    b->holding_capacity = b->holding_capacity ? 2 * b->holding_capacity : 64;
    xrecalloc(b->holdings, b->holding_capacity, sizeof(tp_holding_t));
  }
  memset(&b->holdings[b->holding_count], 0, sizeof(tp_holding_t));
  return &b->holdings[b->holding_count++];
}

/* The model's priority of a job: partition PriorityTier, plus the QOS priority with
 * `relation = qos`. It is the priority_weighted cost (plus priority_offset). */
static int _model_priority(job_record_t* job_ptr) {
  int tier = job_ptr->part_ptr ? job_ptr->part_ptr->priority_tier : 0;

  if (use_qos && job_ptr->qos_ptr) return tier + (int)MIN(job_ptr->qos_ptr->priority, 0xffffU);
  return tier;
}

/* With `relation = qos`, who may be preempted depends on the preemptor's QOS, not on an order
 * of priorities: the preemptor then outranks everyone in the model, and each job is
 * preemptible exactly when preempt/qos would let this preemptor preempt it. */
#define TP_QOS_PREEMPTOR_PRIORITY 0x40000000

/* The cores a job holds on one socket of its job_node-th node: one word-wide count over the
 * socket's run of core_bitmap, not one get_job_resources_bit (each a walk of the job's node
 * layout) per core, since the snapshot is read under the job write lock. Where the job's
 * layout has fewer cores on the socket than the node (not expected; get_job_resources_offset
 * logs it), it counts what the layout has, core by core, as before. */
static int _cores_held_on_socket(job_resources_t* res, int job_node, int socket, int cores) {
  int first, last;
  int held = 0;

  if (cores <= 0) return 0;
  first = get_job_resources_offset(res, job_node, socket, 0);
  last = get_job_resources_offset(res, job_node, socket, cores - 1);
  if ((first >= 0) && (last == first + cores - 1))
    return bit_set_count_range(res->core_bitmap, first, last + 1);
  for (int c = 0; c < cores; c++) {
    if (get_job_resources_bit(res, job_node, socket, c) == 1) held++;
  }
  return held;
}

/* Whether `preemptor` may take `job_ptr` out: cons_tres can only take REQUEUE and CANCEL
 * victims out of its simulated cluster. Only with `relation = qos` does it depend on the
 * preemptor. */
static int _job_preemptible(job_record_t* job_ptr, job_record_t* preemptor) {
  uint16_t mode = _job_preempt_mode(job_ptr);

  return ((mode == PREEMPT_MODE_REQUEUE) || (mode == PREEMPT_MODE_CANCEL)) &&
         !job_ptr->het_job_id && !IS_JOB_SUSPENDED(job_ptr) &&
         (use_qos ? _qos_preemptable(job_ptr, preemptor)
                  : (job_ptr->part_ptr && (job_ptr->part_ptr->preempt_mode != PREEMPT_MODE_OFF)));
}

static int _read_job(snapshot_buffers_t* b, job_record_t* job_ptr, job_record_t* preemptor) {
  job_resources_t* res = job_ptr->job_resrcs;
  gres_state_t* gpu = _find_gpu_gres(job_ptr->gres_list_alloc);
  gres_job_state_t* gpu_state = gpu ? gpu->gres_data : NULL;
  tp_job_t* job;
  int job_node = 0;
  bool whole_node = _exclusive(job_ptr);

  if (b->job_count == b->job_capacity) {
    b->job_capacity = b->job_capacity ? 2 * b->job_capacity : 32;
    xrecalloc(b->jobs, b->job_capacity, sizeof(tp_job_t));
    xrecalloc(b->job_ptrs, b->job_capacity, sizeof(job_record_t*));
  }
  b->job_ptrs[b->job_count] = job_ptr;
  job = &b->jobs[b->job_count++];
  job->job_id = job_ptr->job_id;
  job->name = job_ptr->name ? job_ptr->name : "";
  job->partition = job_ptr->part_ptr ? job_ptr->part_ptr->name : "";
  job->priority = _model_priority(job_ptr);
  job->preemptible = _job_preemptible(job_ptr, preemptor);
  job->start_time = (double)job_ptr->start_time;
  job->first_holding = b->holding_count;

  for (int n = bit_ffs(res->node_bitmap); n >= 0 && n < bit_size(res->node_bitmap); n++) {
    node_record_t* node_ptr;
    tp_holding_t* holding;

    if (!bit_test(res->node_bitmap, n)) continue;
    node_ptr = node_record_table_ptr[n];
    if (!node_ptr) return -1;
    holding = _new_holding(b);
    holding->node = n;
    if (whole_node) {
      /* cons_tres lets no other job onto an --exclusive job's node: it holds all of it. */
      tp_node_t* node = &b->nodes[n];
      for (int s = 0; (s < node->sockets) && (s < TP_MAX_SOCKETS); s++)
        holding->cores_on_socket[s] = node->cores_per_socket;
      holding->gpu_mask = (node->gpus >= 64) ? ~UINT64_C(0) : ((UINT64_C(1) << node->gpus) - 1);
      holding->memory_mb = node->memory_mb;
      job_node++;
      continue;
    }
    for (int s = 0; s < node_ptr->tot_sockets; s++)
      holding->cores_on_socket[s] = _cores_held_on_socket(res, job_node, s, node_ptr->cores);
    if (res->memory_allocated && (job_node < (int)res->nhosts))
      holding->memory_mb = (int64_t)res->memory_allocated[job_node];
    if (gpu_state && gpu_state->gres_bit_alloc && (job_node < (int)gpu_state->node_cnt) &&
        gpu_state->gres_bit_alloc[job_node]) {
      bitstr_t* gpus = gpu_state->gres_bit_alloc[job_node];
      for (int g = 0; (g < bit_size(gpus)) && (g < TP_MAX_GPUS); g++) {
        if (bit_test(gpus, g)) holding->gpu_mask |= (UINT64_C(1) << g);
      }
    }
    job_node++;
  }
  job->holding_count = b->holding_count - job->first_holding;
  return 0;
}

static int _read_jobs(snapshot_buffers_t* b, job_record_t* preemptor) {
  for (struct listNode* p = _job_list_head(); p; p = p->next) {
    job_record_t* job_ptr = p->data;

    if (!job_ptr || !_holds_resources(job_ptr)) continue;
    if (_read_job(b, job_ptr, preemptor)) return -1;
  }
  return 0;
}

/* The snapshot read last, and the state fingerprint it was read in. A main-scheduler or
 * backfill pass asks about many pending jobs in one state: the cluster is read once for all
 * of them, not once per job. Its strings and records are borrowed from slurmctld, which the
 * fingerprint covers (their addresses included). Only the scheduler threads touch it, under
 * the job write lock, like the plan in force. */
static snapshot_buffers_t read_snapshot;
static uint64_t read_snapshot_fingerprint = 0;
static bool read_snapshot_valid = false;

static void _forget_snapshot(void) {
  _free_buffers(&read_snapshot);
  memset(&read_snapshot, 0, sizeof(read_snapshot));
  read_snapshot_valid = false;
}

/* The cluster in the state `fingerprint` for `preemptor`, or NULL when it cannot be read. */
static const snapshot_buffers_t* _snapshot_for(job_record_t* preemptor, uint64_t fingerprint) {
  if (read_snapshot_valid && (read_snapshot_fingerprint == fingerprint)) {
    /* With `relation = qos` who may be preempted depends on the preemptor's QOS. */
    if (use_qos) {
      for (int j = 0; j < read_snapshot.job_count; j++)
        read_snapshot.jobs[j].preemptible = _job_preemptible(read_snapshot.job_ptrs[j], preemptor);
    }
    return &read_snapshot;
  }
  _forget_snapshot();
  _read_switches(&read_snapshot);
  if (_read_nodes(&read_snapshot) || _read_jobs(&read_snapshot, preemptor)) {
    _forget_snapshot();
    return NULL;
  }
  read_snapshot_fingerprint = fingerprint;
  read_snapshot_valid = true;
  return &read_snapshot;
}

/* ---- the pending job's request ------------------------------------------------------------ */

static uint32_t _max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }

/* Nodes the job may use, one flag per node in `eligible` (node_record_count entries): its
 * partition's nodes that are not DOWN/DRAINED, minus `-x` and what backfill excludes (backfill
 * puts the nodes it reserves for other jobs into exc_node_bitmap before select_nodes, an empty
 * bitmap included), within `-w` and the nodes its reservation (or the absence of one) allows,
 * and with its --constraint features. Returns NULL, or the reason it cannot be mapped. */
static const char* _eligible_nodes(job_record_t* job_ptr, uint32_t nodes, unsigned char* eligible) {
  struct job_details* details = job_ptr->details;
  bitstr_t *usable, *resv_nodes = NULL, *resv_cores = NULL;
  const char* why = NULL;
  time_t when = time(NULL);
  bool resv_overlap = false, has_xor = false;

  if (!job_ptr->part_ptr || !job_ptr->part_ptr->node_bitmap) return "no partition";
  usable = bit_copy(job_ptr->part_ptr->node_bitmap);
  if (avail_node_bitmap) bit_and(usable, avail_node_bitmap);
  if (details->exc_node_bitmap) bit_and_not(usable, details->exc_node_bitmap);
  if (details->req_node_bitmap) {
    /* -w names the nodes to use; with as many nodes as the job needs they are its nodes. */
    if (bit_set_count(details->req_node_bitmap) != (int)nodes)
      why = "-w/--nodelist with fewer nodes than the job's node count";
    else
      bit_and(usable, details->req_node_bitmap);
  }
  if (!why) {
    int rc = job_test_resv(job_ptr, &when, false, &resv_nodes, &resv_cores, &resv_overlap, false);
    if (rc != SLURM_SUCCESS)
      why = "its reservation does not allow a start now";
    else if (resv_cores && (bit_set_count(resv_cores) > 0))
      why = "a reservation of part of a node's cores";
    else if (resv_nodes)
      bit_and(usable, resv_nodes);
  }
  if (!why && (details->features || details->features_use)) {
    if ((valid_feature_counts(job_ptr, true, usable, &has_xor) != SLURM_SUCCESS) || has_xor)
      why = "--constraint with node counts, XOR or brackets";
  }
  for (int i = 0; !why && (i < node_record_count); i++) eligible[i] = bit_test(usable, i) ? 1 : 0;
  FREE_NULL_BITMAP(usable);
  FREE_NULL_BITMAP(resv_nodes);
  FREE_NULL_BITMAP(resv_cores);
  return why;
}

/* Fills `request` when the job's options map onto the model and returns NULL, else returns
 * why not (such a job gets stock behaviour). `eligible` has node_record_count entries. */
static const char* _read_request(job_record_t* job_ptr, tp_request_t* request,
                                 unsigned char* eligible) {
  struct job_details* details = job_ptr->details;
  gres_state_t* gpu = _find_gpu_gres(job_ptr->gres_list_req);
  gres_job_state_t* gpu_state = gpu ? gpu->gres_data : NULL;
  uint16_t sockets_per_node = NO_VAL16;
  uint32_t nodes, cores;
  uint16_t tasks_per_node;
  const char* why;

  memset(request, 0, sizeof(*request));
  request->job_id = job_ptr->job_id;
  request->name = job_ptr->name ? job_ptr->name : "";
  request->priority = use_qos ? TP_QOS_PREEMPTOR_PRIORITY : _model_priority(job_ptr);
  if (!details || job_ptr->het_job_id) return "no details or a hetjob";
  /* max_nodes 0 means -N was not given: Slurm may use any count from min_nodes up, and a plan
   * that lets the job start on min_nodes nodes lets Slurm start it. */
  if ((details->min_nodes < 1) || (details->max_nodes && (details->max_nodes != details->min_nodes)))
    return "node count is a range (-N<min>-<max>)";
  nodes = details->min_nodes;
  request->nodes = (int)nodes;
  if (details->whole_node && (details->whole_node != WHOLE_NODE_REQUIRED))
    return "--exclusive=user or --exclusive=mcs";
  request->exclusive = _exclusive(job_ptr) ? 1 : 0;
  tasks_per_node = ((details->ntasks_per_node != 0) && (details->ntasks_per_node != NO_VAL16))
                       ? details->ntasks_per_node
                       : 0;
  if (details->mc_ptr) sockets_per_node = details->mc_ptr->sockets_per_node;
  if (gpu_state && gpu_state->gres_per_socket && (sockets_per_node == 1)) {
    request->gpus_per_node = gpu_state->gres_per_socket;
    request->replica_scope = TP_SCOPE_SOCKET;
  } else if (gpu_state && gpu_state->gres_per_socket) {
    return "--gpus-per-socket with --sockets-per-node other than 1";
  } else if (gpu_state && gpu_state->gres_per_node) {
    request->gpus_per_node = gpu_state->gres_per_node; /* --gpus-per-node, --gres=gpu:N */
  } else if (gpu_state && gpu_state->gres_per_task && tasks_per_node) {
    request->gpus_per_node = gpu_state->gres_per_task * tasks_per_node;
  } else if (gpu_state && gpu_state->gres_per_task && details->num_tasks &&
             (details->num_tasks % nodes == 0)) {
    request->gpus_per_node = gpu_state->gres_per_task * (details->num_tasks / nodes);
  } else if (gpu_state && gpu_state->gres_per_job && (gpu_state->gres_per_job % nodes == 0)) {
    request->gpus_per_node = gpu_state->gres_per_job / nodes; /* --gpus=G */
  } else if (gpu_state) {
    return "GPU request not evenly spread over its nodes";
  }
  /* Whole cores on each node (one CPU = one core), the most any option asks for; rounding up
   * keeps the plan sufficient. */
  cores = (details->min_cpus + nodes - 1) / nodes;
  cores = _max_u32(cores, details->pn_min_cpus);
  if (tasks_per_node)
    cores = _max_u32(cores, (uint32_t)tasks_per_node *
                                ((details->cpus_per_task && (details->cpus_per_task != NO_VAL16))
                                     ? details->cpus_per_task
                                     : 1));
  if (gpu_state && gpu_state->cpus_per_gres && (gpu_state->cpus_per_gres != NO_VAL16))
    cores = _max_u32(cores, (uint32_t)gpu_state->cpus_per_gres * (uint32_t)request->gpus_per_node);
  request->cores_per_node = (int)cores;
  if (_memory_modelled() && !request->exclusive) {
    uint64_t memory = details->pn_min_memory;
    if (gpu_state && gpu_state->mem_per_gres && (gpu_state->mem_per_gres != NO_VAL64))
      request->memory_per_node_mb = (int64_t)(gpu_state->mem_per_gres * request->gpus_per_node);
    else if (memory & MEM_PER_CPU)
      request->memory_per_node_mb = (int64_t)((memory & ~MEM_PER_CPU) * cores);
    else if ((memory == 0) || (memory == NO_VAL64))
      return "--mem=0 or no memory request with CR_Memory (all of a node's memory)";
    else
      request->memory_per_node_mb = (int64_t)memory;
  }
  request->one_switch = (job_ptr->req_switch == 1);
  if (job_ptr->req_switch > 1) return "--switches greater than 1";
  if ((why = _eligible_nodes(job_ptr, nodes, eligible))) return why;
  request->eligible = eligible;
  request->exc_node_bitmap = details->exc_node_bitmap ? 1 : 0;
  return NULL;
}

static int _lower_preemptible_partition(void* x, void* key) {
  part_record_t* part_ptr = x;
  part_record_t* preemptor_part = key;

  return (part_ptr->preempt_mode != PREEMPT_MODE_OFF) &&
                 (part_ptr->priority_tier < preemptor_part->priority_tier)
             ? 1
             : 0;
}

/* Whether any partition could hold a victim of `preemptor`: pending jobs of the lowest tier
 * (most of a queue) then cost nothing. part_list is not the list being iterated. */
static bool _may_preempt_anyone(job_record_t* preemptor) {
  if (use_qos)
    return preemptor->qos_ptr && preemptor->qos_ptr->preempt_bitstr &&
           (bit_set_count(preemptor->qos_ptr->preempt_bitstr) > 0);
  return preemptor->part_ptr && part_list &&
         list_find_first_ro(part_list, _lower_preemptible_partition, preemptor->part_ptr);
}

/* With `relation = partition_prio`, QOS Preempt= relations are not followed (docs/slurm.md,
 * "QOS preemption"): a site that preempts by QOS must hear it, at error level, the first time
 * a job with such a QOS asks. */
static void _warn_qos_relations(job_record_t* preemptor) {
  static bool warned = false;
  slurmdb_qos_rec_t* qos = preemptor->qos_ptr;

  if (use_qos || warned || !qos || !qos->preempt_bitstr || (bit_set_count(qos->preempt_bitstr) == 0)) return;
  warned = true;
  error(
      "%s: QOS %s of %pJ has Preempt= relations, which are not followed: preemption follows "
      "partition PriorityTier; set 'relation = qos' in topopreempt.conf for QOS preemption",
      plugin_type, qos->name ? qos->name : "?", preemptor);
}

/* Makes the plan for `preemptor` current: the engine's cached plan when the job's request and
 * the state are unchanged (one walk of job_list for the fingerprint), else a new one. */
static void _ensure_plan(job_record_t* preemptee, job_record_t* preemptor) {
  const snapshot_buffers_t* b;
  tp_snapshot_t snapshot;
  tp_request_t request;
  uint64_t fingerprint;
  struct listNode* head = _job_list_head();
  unsigned char* eligible;
  const char* why;
  int cached;

  /* Within one list_for_each pass the state cannot change (we hold the locks): only the
   * pass's first call, or a new preemptor, needs to look at the cluster again. */
  if ((plan_preemptor == preemptor) && (plan_preemptor_id == preemptor->job_id) && head &&
      (head->data != preemptee))
    return;
  plan_preemptor = preemptor;
  plan_preemptor_id = preemptor->job_id;
  plan_kind = TP_PLAN_NONE;
  _warn_qos_relations(preemptor);
  if (!engine || !head || !_may_preempt_anyone(preemptor)) return;
  eligible = xcalloc(node_record_count + 1, 1);
  if ((why = _read_request(preemptor, &request, eligible))) {
    _stock(preemptor, why);
    xfree(eligible);
    return;
  }
  /* A cycle: what one thread does until sdiag's main or backfill cycle counter moves (both
   * scheduler threads hold the job write lock for the jobs they test, and an RPC thread's
   * select_nodes is charged to its own thread). */
  tp_engine_set_cycle(engine, _mix(_mix(_mix(0xcbf29ce484222325ULL, (uint64_t)pthread_self()),
                                        slurmctld_diag_stats.schedule_cycle_counter),
                                   slurmctld_diag_stats.bf_cycle_counter));
  fingerprint = _fingerprint();
  cached = tp_engine_use_cached(engine, &request, node_record_count, fingerprint);
  if (cached >= 0) {
    plan_kind = (tp_plan_kind_t)cached;
    xfree(eligible);
    return;
  }
  if (!(b = _snapshot_for(preemptor, fingerprint))) {
    error("%s: could not read the cluster state; stock behaviour for %pJ", plugin_type, preemptor);
    xfree(eligible);
    return;
  }
  snapshot.switches = b->switches;
  snapshot.switch_count = b->switch_count;
  snapshot.nodes = b->nodes;
  snapshot.node_count = b->node_count;
  snapshot.jobs = b->jobs;
  snapshot.job_count = b->job_count;
  snapshot.holdings = b->holdings;
  snapshot.holding_count = b->holding_count;
  snapshot.now = (double)time(NULL);
  snapshot.memory_modelled = _memory_modelled() ? 1 : 0;
  plan_kind = tp_engine_plan(engine, &snapshot, &request, fingerprint);
  xfree(eligible);
}

/* ---- the plugin API ----------------------------------------------------------------------- */

extern int init(void) {
  char* config = get_extra_conf_path("topopreempt.conf");

  engine = tp_engine_create(config, _log);
  if (!engine)
    error(
        "%s: configuration %s rejected; every decision falls back to stock "
        "partition_prio behaviour",
        plugin_type, config);
  else
    verbose("%s loaded (configuration %s)", plugin_type, config);
  use_qos = engine && tp_engine_relation_is_qos(engine);
  xfree(config);
  return SLURM_SUCCESS;
}

extern void fini(void) {
  tp_engine_destroy(engine);
  engine = NULL;
  use_qos = false;
  plan_preemptor = NULL;
  _forget_snapshot();
}

extern bool preempt_p_job_preempt_check(job_queue_rec_t* preemptor, job_queue_rec_t* preemptee) {
  if (use_qos) return _qos_preemptable(preemptee->job_ptr, preemptor->job_ptr);
  return preemptor->part_ptr && preemptee->part_ptr &&
         bit_overlap_any(preemptor->part_ptr->node_bitmap, preemptee->part_ptr->node_bitmap) &&
         (preemptor->part_ptr->priority_tier > preemptee->part_ptr->priority_tier);
}

extern bool preempt_p_preemptable(job_record_t* preemptee, job_record_t* preemptor) {
  /* Before the stock test: _ensure_plan must see the first call of every pass to notice a
   * changed state, whatever the first job in job_list is. */
  _ensure_plan(preemptee, preemptor);
  if (!_stock_preemptable(preemptee, preemptor)) return false;
  switch (plan_kind) {
    case TP_PLAN_VICTIMS:
      return tp_engine_victim_rank(engine, preemptee->job_id) >= 0;
    case TP_PLAN_NONE:
    default:
      return true;
  }
}

extern int preempt_p_get_data(job_record_t* job_ptr, slurm_preempt_data_type_t data_type,
                              void* data) {
  int rank;

  switch (data_type) {
    case PREEMPT_DATA_ENABLED:
      (*(bool*)data) = slurm_conf.preempt_mode != PREEMPT_MODE_OFF;
      break;
    case PREEMPT_DATA_MODE:
      (*(uint16_t*)data) = _job_preempt_mode(job_ptr);
      break;
    case PREEMPT_DATA_PRIO:
      /* The plan's victims first, in its order: cons_tres removes them in this order. */
      rank = (plan_kind == TP_PLAN_VICTIMS) ? tp_engine_victim_rank(engine, job_ptr->job_id) : -1;
      (*(uint32_t*)data) = (rank >= 0) ? (uint32_t)rank : _stock_prio(job_ptr);
      break;
    case PREEMPT_DATA_GRACE_TIME:
      if (use_qos)
        (*(uint32_t*)data) = job_ptr->qos_ptr ? job_ptr->qos_ptr->grace_time : 0;
      else
        (*(uint32_t*)data) = job_ptr->part_ptr ? job_ptr->part_ptr->grace_time : 0;
      break;
    default:
      error("%s: unknown enum %d", __func__, data_type);
      return SLURM_ERROR;
  }
  return SLURM_SUCCESS;
}
