/* SPDX-License-Identifier: MIT */
/* Every entry point of topopreempt_c.h, from C: the happy paths, every error path, and that a
 * failed call leaves the state as it was (the state version, the workload count and a probe
 * plan's answer do not move). Compiled as C11 with -Wall -Wextra -Wpedantic -Werror. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topopreempt_c.h"

static int failures = 0;

#define CHECK(condition)                                                            \
  do {                                                                              \
    if (!(condition)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #condition); \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

/* `call` returns `expected`, and the message names `needle` (on failure) or is empty. */
#define EXPECT(cluster, call, expected, needle)                                                \
  do {                                                                                         \
    tp_status status_ = (call);                                                                \
    const char* message_ = tp_cluster_last_error(cluster);                                     \
    if (status_ != (expected) || strstr(message_, (needle)) == NULL ||                         \
        ((expected) == TP_OK) != (message_[0] == '\0')) {                                      \
      fprintf(stderr, "%s:%d: %s gave %s '%s', expected %s naming '%s'\n", __FILE__, __LINE__, \
              #call, tp_status_name(status_), message_, tp_status_name(expected), (needle));   \
      ++failures;                                                                              \
    }                                                                                          \
  } while (0)

#define OK(cluster, call) EXPECT(cluster, call, TP_OK, "")

static uint64_t state_version(tp_cluster* cluster, size_t* workloads) {
  tp_cluster_info info;
  tp_cluster_info_init(&info);
  CHECK(tp_cluster_get_info(cluster, &info) == TP_OK);
  if (workloads != NULL) *workloads = info.workloads;
  return info.state_version;
}

/* A cluster of 2 racks x 2 nodes; each node: 2 NUMA nodes (16 cores) x 1 PCIe switch x 2 GPUs.
 * Built domain by domain, as a Kubernetes plugin would from node labels and ResourceSlices. */
static const char* const levels[] = {"cluster", "rack", "node", "numa", "pcie", "gpu"};
static const tp_resource resources[] = {{"gpu_milli", TP_RESOURCE_DEVICE},
                                        {"cpu_milli", TP_RESOURCE_POOLED}};

static void add_node(tp_cluster* cluster, const char* rack, int node) {
  char path[128];
  const tp_amount cores = {"cpu_milli", 16000};
  const tp_amount gpu = {"gpu_milli", 1000};
  snprintf(path, sizeof path, "%s/node%d", rack, node);
  OK(cluster, tp_cluster_add_domain(cluster, path, "node", NULL, 0));
  for (int numa = 0; numa < 2; ++numa) {
    snprintf(path, sizeof path, "%s/node%d/numa%d", rack, node, numa);
    OK(cluster, tp_cluster_add_domain(cluster, path, "numa", &cores, 1));
    snprintf(path, sizeof path, "%s/node%d/numa%d/pcie0", rack, node, numa);
    OK(cluster, tp_cluster_add_domain(cluster, path, "pcie", NULL, 0));
    for (int g = 0; g < 2; ++g) {
      snprintf(path, sizeof path, "%s/node%d/numa%d/pcie0/gpu%d", rack, node, numa, g);
      OK(cluster, tp_cluster_add_domain(cluster, path, "gpu", &gpu, 1));
    }
  }
}

/* The schema of `levels` and `resources` with hosts at `host_level`. */
static tp_schema schema_of(const char* host_level) {
  tp_schema schema;
  tp_schema_init(&schema);
  schema.levels = levels;
  schema.level_count = 6;
  schema.device_level = "gpu";
  schema.host_level = host_level;
  schema.resources = resources;
  schema.resource_count = 2;
  return schema;
}

static tp_cluster* make_cluster(void) {
  tp_cluster* cluster = tp_cluster_create();
  const tp_schema schema = schema_of("node");
  CHECK(cluster != NULL);
  OK(cluster, tp_cluster_define(cluster, &schema));
  OK(cluster, tp_cluster_add_domain(cluster, "rack0", "rack", NULL, 0));
  OK(cluster, tp_cluster_add_domain(cluster, "rack1", "rack", NULL, 0));
  add_node(cluster, "rack0", 0);
  add_node(cluster, "rack0", 1);
  add_node(cluster, "rack1", 2);
  add_node(cluster, "rack1", 3);
  OK(cluster, tp_cluster_seal(cluster));
  return cluster;
}

/* Starts a 1-replica workload holding `gpus` GPUs of one NUMA node of `host` and 2 cores. */
static tp_status start(tp_cluster* cluster, uint64_t id, int priority, const char* host, int numa,
                       int first_gpu, int gpus) {
  tp_workload w;
  tp_placement_entry entries[3];
  char paths[3][64];
  const tp_amount cores = {"cpu_milli", 2000};
  const tp_amount demand = {"cpu_milli", 2000};
  tp_workload_init(&w);
  w.id = id;
  w.priority = priority;
  w.whole_devices = gpus;
  w.demand = &demand;
  w.demand_count = 1;
  w.replica_scope.mode = TP_SCOPE_GUARANTEED;
  w.replica_scope.level = "numa";
  w.seconds_since_checkpoint = 60.0 * (double)id;
  memset(entries, 0, sizeof entries);
  for (int g = 0; g < gpus; ++g) {
    snprintf(paths[g], sizeof paths[g], "numa%d/pcie0/gpu%d", numa, first_gpu + g);
    entries[g].host = host;
    entries[g].path = paths[g];
  }
  snprintf(paths[gpus], sizeof paths[gpus], "numa%d", numa);
  entries[gpus].host = host;
  entries[gpus].path = paths[gpus];
  entries[gpus].amounts = &cores;
  entries[gpus].amount_count = 1;
  return tp_cluster_workload_start(cluster, &w, entries, (size_t)gpus + 1);
}

/* Fills every GPU: 16 one-GPU workloads, ids 1..16, priorities 0..3. */
static void fill(tp_cluster* cluster) {
  const char* hosts[] = {"node0", "node1", "node2", "node3"};
  uint64_t id = 1;
  for (int h = 0; h < 4; ++h) {
    for (int numa = 0; numa < 2; ++numa) {
      for (int g = 0; g < 2; ++g, ++id) {
        OK(cluster, start(cluster, id, (int)(id % 4), hosts[h], numa, g, 1));
      }
    }
  }
}

static void preemptor_of(tp_workload* w, uint64_t id, int gpus, const char* scope) {
  tp_workload_init(w);
  w->id = id;
  w->name = "serving";
  w->priority = 10;
  w->whole_devices = gpus;
  w->replica_scope.mode = TP_SCOPE_GUARANTEED;
  w->replica_scope.level = scope;
}

static void test_versions_and_null(void) {
  tp_workload w;
  tp_plan_options options;
  tp_cluster_info info;
  tp_plan_info plan_info;
  const tp_victim* victims = NULL;
  const tp_plan_entry* entries = NULL;
  tp_plan* plan = (tp_plan*)&w; /* must be reset to NULL on failure */
  size_t count = 0;
  CHECK(tp_abi_version() == TP_ABI_VERSION);
  CHECK(strchr(tp_library_version(), '.') != NULL);
  CHECK(strcmp(tp_status_name(TP_E_CONFLICT), "TP_E_CONFLICT") == 0);
  CHECK(strcmp(tp_status_name((tp_status)99), "unknown") == 0);
  CHECK(strcmp(tp_cluster_last_error(NULL), "cluster is NULL") == 0);
  tp_workload_init(&w);
  tp_plan_options_init(&options);
  tp_cluster_info_init(&info);
  tp_plan_info_init(&plan_info);
  tp_schema_init(NULL); /* init functions accept NULL */
  tp_workload_init(NULL);
  tp_cost_term_init(NULL, TP_COST_LOST_WORK);
  CHECK(tp_cluster_define(NULL, NULL) == TP_E_NULL);
  CHECK(tp_cluster_define_shape(NULL, "hgx_h100", 1, 1) == TP_E_NULL);
  CHECK(tp_cluster_add_domain(NULL, "a", "rack", NULL, 0) == TP_E_NULL);
  CHECK(tp_cluster_add_machine(NULL, "a", "hgx_h100") == TP_E_NULL);
  CHECK(tp_cluster_remove_domain(NULL, "a") == TP_E_NULL);
  CHECK(tp_cluster_set_affinity(NULL, "a", NULL, 0) == TP_E_NULL);
  CHECK(tp_cluster_seal(NULL) == TP_E_NULL);
  CHECK(tp_cluster_get_info(NULL, &info) == TP_E_NULL);
  CHECK(tp_cluster_workload_start(NULL, &w, NULL, 0) == TP_E_NULL);
  CHECK(tp_cluster_workload_finish(NULL, 1) == TP_E_NULL);
  CHECK(tp_cluster_workload_shrink(NULL, 1, NULL, 0) == TP_E_NULL);
  CHECK(tp_cluster_workload_running(NULL, 1) == 0);
  CHECK(tp_cluster_plan(NULL, &w, &options, &plan) == TP_E_NULL);
  CHECK(plan == NULL);
  CHECK(tp_cluster_commit(NULL, NULL) == TP_E_NULL);
  CHECK(tp_plan_get_info(NULL, &plan_info) == TP_E_NULL);
  CHECK(tp_plan_get_victims(NULL, &victims, &count) == TP_E_NULL);
  CHECK(tp_plan_get_placement(NULL, &entries, &count) == TP_E_NULL);
  tp_plan_destroy(NULL);
  tp_cluster_destroy(NULL);
}

static void test_topology_errors(void) {
  tp_cluster* cluster = tp_cluster_create();
  tp_schema schema;
  const tp_amount gpu = {"gpu_milli", 1000};
  const tp_amount negative = {"cpu_milli", -1};
  const tp_amount unknown = {"tpu", 1};
  const double affinity[4] = {0, 1, 1, 0};
  tp_cluster_info info;
  /* Nothing before a topology is defined. */
  EXPECT(cluster, tp_cluster_add_domain(cluster, "rack0", "rack", NULL, 0), TP_E_STATE,
         "tp_cluster_define");
  EXPECT(cluster, tp_cluster_seal(cluster), TP_E_STATE, "no topology");
  EXPECT(cluster, tp_cluster_workload_finish(cluster, 1), TP_E_STATE, "tp_cluster_seal");
  EXPECT(cluster, tp_cluster_define(cluster, NULL), TP_E_NULL, "schema");
  tp_schema_init(&schema);
  schema.struct_size = 0;
  EXPECT(cluster, tp_cluster_define(cluster, &schema), TP_E_ABI, "tp_schema_init");
  schema = schema_of("socket");
  EXPECT(cluster, tp_cluster_define(cluster, &schema), TP_E_INVALID, "socket");
  schema.host_level = "node";
  OK(cluster, tp_cluster_define(cluster, &schema));
  EXPECT(cluster, tp_cluster_add_domain(cluster, "rack0", "shelf", NULL, 0), TP_E_INVALID,
         "unknown level 'shelf'");
  EXPECT(cluster, tp_cluster_add_domain(cluster, "rack9/node0", "node", NULL, 0), TP_E_NOT_FOUND,
         "rack9");
  EXPECT(cluster, tp_cluster_add_domain(cluster, "rack0//node0", "node", NULL, 0), TP_E_INVALID,
         "rack0//node0");
  EXPECT(cluster, tp_cluster_add_domain(cluster, NULL, "node", NULL, 0), TP_E_NULL, "path");
  OK(cluster, tp_cluster_add_domain(cluster, "rack0", "rack", NULL, 0));
  EXPECT(cluster, tp_cluster_add_domain(cluster, "rack0", "rack", NULL, 0), TP_E_CONFLICT,
         "already exists");
  EXPECT(cluster, tp_cluster_add_domain(cluster, "rack0/node0", "rack", NULL, 0), TP_E_INVALID,
         "deeper");
  EXPECT(cluster, tp_cluster_add_domain(cluster, "rack0/node0", "node", &gpu, 1), TP_E_INVALID,
         "gpu_milli");
  EXPECT(cluster, tp_cluster_add_domain(cluster, "rack0/node0", "node", &negative, 1), TP_E_INVALID,
         "negative");
  EXPECT(cluster, tp_cluster_add_domain(cluster, "rack0/node0", "node", &unknown, 1), TP_E_INVALID,
         "'tpu'");
  EXPECT(cluster, tp_cluster_add_domain(cluster, "rack0/node0", "node", NULL, 1), TP_E_NULL,
         "amounts");
  OK(cluster, tp_cluster_add_domain(cluster, "rack0/node0", "node", NULL, 0));
  OK(cluster, tp_cluster_add_domain(cluster, "rack0/node0/gpu0", "gpu", &gpu, 1));
  EXPECT(cluster, tp_cluster_add_domain(cluster, "rack0/node0/gpu0/x", "gpu", &gpu, 1),
         TP_E_INVALID, "leaves");
  EXPECT(cluster, tp_cluster_set_affinity(cluster, "rack0", affinity, 2), TP_E_INVALID,
         "host level");
  EXPECT(cluster, tp_cluster_set_affinity(cluster, "rack0/node0", NULL, 2), TP_E_NULL, "NULL");
  OK(cluster, tp_cluster_set_affinity(cluster, "rack0/node0", affinity, 2));
  /* A 2x2 matrix for a host of one device is refused at seal, and the edits stay pending. */
  EXPECT(cluster, tp_cluster_seal(cluster), TP_E_INVALID, "affinity");
  OK(cluster, tp_cluster_add_domain(cluster, "rack0/node0/gpu1", "gpu", &gpu, 1));
  OK(cluster, tp_cluster_seal(cluster));
  tp_cluster_info_init(&info);
  OK(cluster, tp_cluster_get_info(cluster, &info));
  CHECK(info.sealed == 1 && info.pending_edits == 0 && info.generation == 1);
  CHECK(info.domains == 5 && info.hosts == 1 && info.devices == 2 && info.workloads == 0);
  EXPECT(cluster, tp_cluster_remove_domain(cluster, "rack7"), TP_E_NOT_FOUND, "rack7");
  EXPECT(cluster, tp_cluster_remove_domain(cluster, ""), TP_E_INVALID, "root");
  /* Shapes. */
  EXPECT(cluster, tp_cluster_add_machine(cluster, "rack0/node1", "hgx_h100"), TP_E_INVALID,
         "standard resources");
  EXPECT(cluster, tp_cluster_define_shape(cluster, "dgx_z", 2, 1), TP_E_INVALID,
         "unknown machine shape 'dgx_z'");
  EXPECT(cluster, tp_cluster_define_shape(cluster, "hgx_h100", 0, 1), TP_E_INVALID, "machines");
  OK(cluster, tp_cluster_define_shape(cluster, "hgx_h100", 4, 2));
  OK(cluster, tp_cluster_add_domain(cluster, "rack2", "rack", NULL, 0));
  OK(cluster, tp_cluster_add_machine(cluster, "rack2/node4", "hgx_h100"));
  EXPECT(cluster, tp_cluster_add_machine(cluster, "rack2/node4", "hgx_h100"), TP_E_CONFLICT,
         "already exists");
  /* A failed machine leaves nothing behind: the same path can be added afterwards. */
  EXPECT(cluster, tp_cluster_add_machine(cluster, "rack2/node5", "gb200_nvl72_rack"), TP_E_INVALID,
         "rack");
  EXPECT(cluster, tp_cluster_add_machine(cluster, "rack2/node5", "rtx4090_server"), TP_E_INVALID,
         "core_group");
  OK(cluster, tp_cluster_add_machine(cluster, "rack2/node5", "hgx_h100"));
  OK(cluster, tp_cluster_seal(cluster));
  OK(cluster, tp_cluster_get_info(cluster, &info));
  CHECK(info.hosts == 6 && info.devices == 48 && info.generation == 2);
  tp_cluster_destroy(cluster);
}

static void test_workload_events(void) {
  tp_cluster* cluster = make_cluster();
  tp_workload w;
  tp_placement_entry entry;
  const tp_amount too_much = {"cpu_milli", 17000};
  size_t workloads = 0;
  uint64_t version = 0;
  const int32_t drop_first = 0;
  fill(cluster);
  version = state_version(cluster, &workloads);
  CHECK(workloads == 16);
  CHECK(tp_cluster_workload_running(cluster, 5) == 1 &&
        tp_cluster_workload_running(cluster, 99) == 0);

  /* Every refused event names its offender and changes nothing. */
  EXPECT(cluster, start(cluster, 3, 0, "node0", 0, 0, 1), TP_E_CONFLICT,
         "workload 3 is already running");
  EXPECT(cluster, start(cluster, 40, 0, "node9", 0, 0, 1), TP_E_NOT_FOUND, "no host 'node9'");
  EXPECT(cluster, start(cluster, 40, 0, "node0", 0, 0, 1), TP_E_INVALID,
         "workload 40"); /* GPU taken */
  EXPECT(cluster, start(cluster, 40, 0, "node0", 5, 0, 1), TP_E_NOT_FOUND, "numa5");
  EXPECT(cluster, tp_cluster_workload_start(cluster, NULL, NULL, 0), TP_E_NULL, "workload is NULL");
  tp_workload_init(&w);
  w.id = 41;
  w.struct_size = sizeof w - 4;
  EXPECT(cluster, tp_cluster_workload_start(cluster, &w, NULL, 0), TP_E_ABI, "tp_workload_init");
  tp_workload_init(&w);
  w.id = 41;
  w.replica_scope.mode = TP_SCOPE_GUARANTEED;
  w.replica_scope.level = "socket";
  EXPECT(cluster, tp_cluster_workload_start(cluster, &w, NULL, 0), TP_E_INVALID,
         "unknown topology level 'socket'");
  w.replica_scope.mode = 7;
  EXPECT(cluster, tp_cluster_workload_start(cluster, &w, NULL, 0), TP_E_INVALID, "tp_scope_mode");
  tp_workload_init(&w);
  w.id = 41;
  w.seconds_since_checkpoint = nan("");
  EXPECT(cluster, tp_cluster_workload_start(cluster, &w, NULL, 0), TP_E_INVALID,
         "seconds_since_checkpoint");
  w.seconds_since_checkpoint = 0;
  w.extra_cost = -1;
  EXPECT(cluster, tp_cluster_workload_start(cluster, &w, NULL, 0), TP_E_INVALID, "extra_cost");
  w.extra_cost = 0;
  w.replicas = 0;
  EXPECT(cluster, tp_cluster_workload_start(cluster, &w, NULL, 0), TP_E_INVALID, "replicas");
  w.replicas = 1;
  EXPECT(cluster, tp_cluster_workload_start(cluster, &w, NULL, 1), TP_E_NULL, "entries");
  memset(&entry, 0, sizeof entry);
  entry.path = "rack0/node0/numa0";
  entry.amounts = &too_much;
  entry.amount_count = 1;
  w.demand = &too_much;
  w.demand_count = 1;
  EXPECT(cluster, tp_cluster_workload_start(cluster, &w, &entry, 1), TP_E_INVALID,
         "workload 41"); /* over capacity */
  entry.replica = 1;
  EXPECT(cluster, tp_cluster_workload_start(cluster, &w, &entry, 1), TP_E_INVALID, "replica 1");
  entry.replica = 0;
  entry.path = NULL;
  EXPECT(cluster, tp_cluster_workload_start(cluster, &w, &entry, 1), TP_E_NULL, "path is NULL");
  EXPECT(cluster, tp_cluster_workload_finish(cluster, 77), TP_E_NOT_FOUND, "workload 77");
  EXPECT(cluster, tp_cluster_workload_shrink(cluster, 77, &drop_first, 1), TP_E_NOT_FOUND,
         "workload 77");
  EXPECT(cluster, tp_cluster_workload_shrink(cluster, 3, &drop_first, 1), TP_E_INVALID,
         "workload 3"); /* not elastic */
  EXPECT(cluster, tp_cluster_workload_shrink(cluster, 3, NULL, 1), TP_E_NULL, "replicas is NULL");
  CHECK(state_version(cluster, &workloads) == version);
  CHECK(workloads == 16);

  /* An elastic gang of 2 replicas on two hosts, addressed from the root, then shrunk. */
  OK(cluster, tp_cluster_workload_finish(cluster, 1));
  OK(cluster, tp_cluster_workload_finish(cluster, 5));
  {
    tp_placement_entry gang[2];
    tp_workload elastic;
    tp_workload_init(&elastic);
    elastic.id = 50;
    elastic.replicas = 2;
    elastic.min_replicas = 1;
    elastic.whole_devices = 1;
    elastic.gang_scope.mode = TP_SCOPE_GUARANTEED;
    elastic.gang_scope.level = "rack";
    memset(gang, 0, sizeof gang);
    gang[0].path = "rack0/node0/numa0/pcie0/gpu0";
    gang[1].replica = 1;
    gang[1].path = "rack0/node1/numa0/pcie0/gpu0";
    OK(cluster, tp_cluster_workload_start(cluster, &elastic, gang, 2));
    EXPECT(cluster, tp_cluster_workload_shrink(cluster, 50, &drop_first, 0), TP_E_INVALID,
           "no replica");
    OK(cluster, tp_cluster_workload_shrink(cluster, 50, &drop_first, 1));
    {
      const int32_t again = 0;
      EXPECT(cluster, tp_cluster_workload_shrink(cluster, 50, &again, 1), TP_E_INVALID,
             "workload 50");
    }
  }
  CHECK(state_version(cluster, &workloads) != version);
  CHECK(workloads == 15);
  tp_cluster_destroy(cluster);
}

static void expect_victims(const tp_plan* plan, size_t expected_count) {
  const tp_victim* victims = NULL;
  size_t count = 99;
  CHECK(tp_plan_get_victims(plan, &victims, &count) == TP_OK);
  CHECK(count == expected_count);
  for (size_t i = 0; i < count; ++i) {
    CHECK(victims[i].action == TP_VICTIM_EVICT || victims[i].action == TP_VICTIM_SHRINK);
    CHECK(victims[i].cost >= 0 && victims[i].reason != NULL);
    if (i > 0) CHECK(victims[i - 1].id < victims[i].id);
  }
}

static void test_plan_commit_replan(void) {
  tp_cluster* cluster = make_cluster();
  tp_workload p;
  tp_plan_options options;
  tp_plan* plan = NULL;
  tp_plan_info info;
  const tp_plan_entry* entries = NULL;
  size_t count = 0;
  size_t workloads = 0;
  uint64_t version = 0;
  fill(cluster);
  version = state_version(cluster, &workloads);
  tp_plan_options_init(&options);
  preemptor_of(&p, 100, 2, "numa");

  /* Bad questions change nothing. */
  preemptor_of(&p, 3, 2, "numa");
  EXPECT(cluster, tp_cluster_plan(cluster, &p, &options, &plan), TP_E_CONFLICT, "already running");
  CHECK(plan == NULL);
  preemptor_of(&p, 100, 2, "numa");
  EXPECT(cluster, tp_cluster_plan(cluster, &p, &options, NULL), TP_E_NULL, "out pointer");
  EXPECT(cluster, tp_cluster_plan(cluster, &p, NULL, &plan), TP_E_NULL, "options");
  options.cost_term_count = 0;
  EXPECT(cluster, tp_cluster_plan(cluster, &p, &options, &plan), TP_E_INVALID, "cost_term_count");
  options.cost_term_count = 1;
  options.cost[0].weight = nan("");
  EXPECT(cluster, tp_cluster_plan(cluster, &p, &options, &plan), TP_E_INVALID, "weight");
  tp_cost_term_init(&options.cost[0], TP_COST_RELOAD_TIME);
  options.cost[0].bandwidth_gib_per_s = 0;
  EXPECT(cluster, tp_cluster_plan(cluster, &p, &options, &plan), TP_E_INVALID, "bandwidth");
  tp_cost_term_init(&options.cost[0], (tp_cost_model)42);
  EXPECT(cluster, tp_cluster_plan(cluster, &p, &options, &plan), TP_E_INVALID, "tp_cost_model");
  tp_plan_options_init(&options);
  options.solver = 9;
  EXPECT(cluster, tp_cluster_plan(cluster, &p, &options, &plan), TP_E_INVALID, "tp_solver");
  options.solver = TP_SOLVER_BRANCH_AND_BOUND;
  options.time_limit_s = -1;
  EXPECT(cluster, tp_cluster_plan(cluster, &p, &options, &plan), TP_E_INVALID, "time_limit_s");
  options.time_limit_s = 0;
  p.replica_scope.level = "socket";
  EXPECT(cluster, tp_cluster_plan(cluster, &p, &options, &plan), TP_E_INVALID,
         "preemptor 100 'serving'");
  p.replica_scope.level = "numa";
  p.model_size_gib = INFINITY;
  EXPECT(cluster, tp_cluster_plan(cluster, &p, &options, &plan), TP_E_INVALID, "model_size_gib");
  p.model_size_gib = 0;
  CHECK(plan == NULL);
  CHECK(state_version(cluster, NULL) == version);

  /* 2 GPUs in one NUMA node: the two cheapest workloads sharing one. */
  OK(cluster, tp_cluster_plan(cluster, &p, &options, &plan));
  CHECK(plan != NULL);
  tp_plan_info_init(&info);
  CHECK(tp_plan_get_info(plan, &info) == TP_OK);
  CHECK(info.status == TP_PLAN_OPTIMAL && info.victim_count == 2 && info.preemptor == 100);
  CHECK(info.lower_bound == info.cost && info.gap == 0.0);
  CHECK(strcmp(info.solver, "branch_and_bound") == 0 &&
        strcmp(info.cost_model, "priority_weighted") == 0);
  CHECK(strcmp(info.target_level, "numa") == 0 && info.target_host[0] == 'n' &&
        strstr(info.explanation, "optimal"));
  expect_victims(plan, 2);
  CHECK(tp_plan_get_placement(plan, &entries, &count) == TP_OK);
  CHECK(count == 2 && info.entry_count == 2 && info.replicas == 1);
  for (size_t i = 0; i < count; ++i) {
    CHECK(entries[i].is_device == 1 && strcmp(entries[i].level, "gpu") == 0);
    CHECK(strstr(entries[i].path, entries[i].host_path) != NULL &&
          strcmp(entries[i].host, info.target_host) == 0);
    CHECK(entries[i].amount_count == 1 &&
          strcmp(entries[i].amounts[0].resource, "gpu_milli") == 0 &&
          entries[i].amounts[0].amount == 1000);
  }
  info.struct_size = 3;
  CHECK(tp_plan_get_info(plan, &info) == TP_E_ABI);

  /* Asking again reuses the decider's reads. */
  {
    tp_plan* again = NULL;
    tp_cluster_info cluster_info;
    tp_plan_info again_info;
    tp_cluster_info_init(&cluster_info);
    OK(cluster, tp_cluster_plan(cluster, &p, &options, &again));
    OK(cluster, tp_cluster_get_info(cluster, &cluster_info));
    CHECK(cluster_info.cached_deciders == 1 && cluster_info.reused_reads > 0);
    tp_plan_info_init(&again_info);
    CHECK(tp_plan_get_info(again, &again_info) == TP_OK);
    CHECK(again_info.cost == info.cost && strcmp(again_info.target, info.target) == 0);
    tp_plan_destroy(again);
  }

  /* Commit: the victims go, the preemptor runs; a second commit is refused. */
  OK(cluster, tp_cluster_commit(cluster, plan));
  CHECK(tp_cluster_workload_running(cluster, 100) == 1);
  CHECK(state_version(cluster, &workloads) != version);
  CHECK(workloads == 15);
  version = state_version(cluster, NULL);
  EXPECT(cluster, tp_cluster_commit(cluster, plan), TP_E_INVALID, "already running");
  CHECK(state_version(cluster, NULL) == version);
  tp_plan_destroy(plan);

  /* Re-plan: a 4-GPU node-scoped preemptor under a weighted sum, every solver. */
  preemptor_of(&p, 101, 4, "node");
  options.cost_term_count = 2;
  tp_cost_term_init(&options.cost[0], TP_COST_LOST_WORK);
  tp_cost_term_init(&options.cost[1], TP_COST_VICTIM_COUNT);
  options.cost[1].weight = 100;
  for (int solver = 0; solver < 3; ++solver) {
    options.solver = solver;
    OK(cluster, tp_cluster_plan(cluster, &p, &options, &plan));
    tp_plan_info_init(&info);
    CHECK(tp_plan_get_info(plan, &info) == TP_OK);
    CHECK(info.status == TP_PLAN_OPTIMAL || info.status == TP_PLAN_FEASIBLE);
    CHECK(strcmp(info.cost_model, "weighted_sum") == 0 && strcmp(info.target_level, "node") == 0);
    CHECK(info.victim_count >= 3);
    tp_plan_destroy(plan);
  }

  /* A stale plan: one of its victims finished meanwhile. */
  options.solver = TP_SOLVER_GREEDY;
  OK(cluster, tp_cluster_plan(cluster, &p, &options, &plan));
  {
    const tp_victim* victims = NULL;
    CHECK(tp_plan_get_victims(plan, &victims, &count) == TP_OK && count > 0);
    OK(cluster, tp_cluster_workload_finish(cluster, victims[0].id));
  }
  version = state_version(cluster, &workloads);
  EXPECT(cluster, tp_cluster_commit(cluster, plan), TP_E_CONFLICT, "stale");
  CHECK(state_version(cluster, NULL) == version);
  tp_plan_destroy(plan);

  /* Infeasible: 5 GPUs inside one NUMA node of 2. */
  preemptor_of(&p, 102, 5, "node");
  OK(cluster, tp_cluster_plan(cluster, &p, &options, &plan));
  tp_plan_info_init(&info);
  CHECK(tp_plan_get_info(plan, &info) == TP_OK && info.status == TP_PLAN_INFEASIBLE);
  CHECK(info.victim_count == 0 && info.entry_count == 0 && info.target[0] == '\0');
  EXPECT(cluster, tp_cluster_commit(cluster, plan), TP_E_INVALID, "infeasible");
  tp_plan_destroy(plan);

  /* No preemption needed: a CPU-only workload; committing it starts it. */
  {
    const tp_amount cores = {"cpu_milli", 1000};
    preemptor_of(&p, 103, 0, "numa");
    p.demand = &cores;
    p.demand_count = 1;
    OK(cluster, tp_cluster_plan(cluster, &p, &options, &plan));
    tp_plan_info_init(&info);
    CHECK(tp_plan_get_info(plan, &info) == TP_OK && info.status == TP_PLAN_NO_PREEMPTION_NEEDED);
    CHECK(tp_plan_get_placement(plan, &entries, &count) == TP_OK && count == 1 &&
          entries[0].is_device == 0);
    OK(cluster, tp_cluster_commit(cluster, plan));
    CHECK(tp_cluster_workload_running(cluster, 103) == 1);
    tp_plan_destroy(plan);
  }
  tp_cluster_destroy(cluster);
}

/* A gang of two 2-GPU replicas with distinct_hosts (ABI 2) lands on two different nodes; the
 * ABI-1 size of tp_workload is still accepted, without the field. */
static void test_distinct_hosts(void) {
  tp_cluster* cluster = make_cluster();
  tp_workload p;
  tp_plan_options options;
  tp_plan* plan = NULL;
  tp_plan_info info;
  const tp_plan_entry* entries = NULL;
  size_t count = 0;
  const char* hosts[2] = {NULL, NULL};
  fill(cluster);
  tp_plan_options_init(&options);
  preemptor_of(&p, 200, 2, "numa");
  p.replicas = 2;
  p.distinct_hosts = 1;
  p.gang_scope.mode = TP_SCOPE_GUARANTEED;
  p.gang_scope.level = "node";
  EXPECT(cluster, tp_cluster_plan(cluster, &p, &options, &plan), TP_E_INVALID, "distinct_hosts");
  p.gang_scope.mode = TP_SCOPE_NONE;
  p.distinct_hosts = 2;
  EXPECT(cluster, tp_cluster_plan(cluster, &p, &options, &plan), TP_E_INVALID, "0 or 1");
  p.distinct_hosts = 1;
  OK(cluster, tp_cluster_plan(cluster, &p, &options, &plan));
  tp_plan_info_init(&info);
  CHECK(tp_plan_get_info(plan, &info) == TP_OK);
  CHECK(info.status == TP_PLAN_OPTIMAL && info.replicas == 2);
  CHECK(tp_plan_get_placement(plan, &entries, &count) == TP_OK);
  for (size_t i = 0; i < count; ++i) {
    if (entries[i].replica < 2 && hosts[entries[i].replica] == NULL)
      hosts[entries[i].replica] = entries[i].host;
  }
  CHECK(hosts[0] != NULL && hosts[1] != NULL && strcmp(hosts[0], hosts[1]) != 0);
  tp_plan_destroy(plan);
  plan = NULL;
  /* ABI 1's struct size: accepted, and reads as distinct_hosts = 0. */
  p.struct_size = offsetof(tp_workload, distinct_hosts);
  OK(cluster, tp_cluster_plan(cluster, &p, &options, &plan));
  tp_plan_destroy(plan);
  tp_cluster_destroy(cluster);
}

static void test_topology_changes_keep_workloads(void) {
  tp_cluster* cluster = make_cluster();
  tp_cluster* other = make_cluster();
  tp_workload p;
  tp_plan_options options;
  tp_plan* plan = NULL;
  tp_cluster_info info;
  size_t workloads = 0;
  uint64_t version = 0;
  fill(cluster);
  tp_plan_options_init(&options);
  preemptor_of(&p, 200, 2, "numa");
  OK(cluster, tp_cluster_plan(cluster, &p, &options, &plan));
  EXPECT(other, tp_cluster_commit(other, plan), TP_E_STATE, "another cluster");

  /* A node joins: pending until sealed; the workloads move over to the new topology. */
  add_node(cluster, "rack1", 4);
  tp_cluster_info_init(&info);
  OK(cluster, tp_cluster_get_info(cluster, &info));
  CHECK(info.pending_edits > 0 && info.hosts == 4);
  EXPECT(cluster, start(cluster, 60, 0, "node4", 0, 0, 1), TP_E_NOT_FOUND, "node4");
  OK(cluster, tp_cluster_seal(cluster));
  OK(cluster, tp_cluster_get_info(cluster, &info));
  CHECK(info.pending_edits == 0 && info.hosts == 5 && info.workloads == 16 &&
        info.cached_deciders == 0);
  EXPECT(cluster, tp_cluster_commit(cluster, plan), TP_E_STATE, "generation");
  tp_plan_destroy(plan);
  /* Now the new node is empty: no preemption needed. */
  OK(cluster, tp_cluster_plan(cluster, &p, &options, &plan));
  {
    tp_plan_info plan_info;
    tp_plan_info_init(&plan_info);
    CHECK(tp_plan_get_info(plan, &plan_info) == TP_OK);
    CHECK(plan_info.status == TP_PLAN_NO_PREEMPTION_NEEDED &&
          strcmp(plan_info.target_host, "node4") == 0);
  }
  tp_plan_destroy(plan);
  OK(cluster, start(cluster, 60, 0, "node4", 0, 0, 1));

  /* A node leaves while workloads still run there: sealing fails and changes nothing. */
  version = state_version(cluster, &workloads);
  OK(cluster, tp_cluster_remove_domain(cluster, "rack0/node1"));
  EXPECT(cluster, start(cluster, 61, 0, "node1", 0, 0, 1), TP_E_NOT_FOUND, "no domain");
  EXPECT(cluster, tp_cluster_seal(cluster), TP_E_STATE, "rack0/node1");
  CHECK(state_version(cluster, NULL) == version);
  for (uint64_t id = 5; id <= 8; ++id) OK(cluster, tp_cluster_workload_finish(cluster, id));
  OK(cluster, tp_cluster_seal(cluster));
  OK(cluster, tp_cluster_get_info(cluster, &info));
  CHECK(info.hosts == 4 && info.workloads == workloads - 4 && info.generation == 3);
  EXPECT(cluster, tp_cluster_define_shape(cluster, "hgx_h100", 1, 1), TP_E_STATE, "running");
  tp_cluster_destroy(other);
  tp_cluster_destroy(cluster);
}

/* The queued plans of `queue`, checked for shape: `expected` outcomes, in planning order. */
static const tp_queued_plan* queued(const tp_queue* queue, size_t expected) {
  const tp_queued_plan* plans = NULL;
  size_t count = 99;
  CHECK(tp_queue_get_plans(queue, &plans, &count) == TP_OK);
  CHECK(count == expected);
  for (size_t i = 0; i < count; ++i) {
    tp_plan_info info;
    tp_plan_info_init(&info);
    CHECK(plans[i].plan != NULL && tp_plan_get_info(plans[i].plan, &info) == TP_OK);
    CHECK(info.preemptor == plans[i].preemptor);
    CHECK((plans[i].status == TP_NOMINATION_REJECTED) == (plans[i].error[0] != '\0'));
    CHECK((plans[i].moved_count == 0) == (plans[i].moved == NULL));
  }
  return count == expected ? plans : NULL;
}

static const char* target_of(const tp_plan* plan) {
  tp_plan_info info;
  tp_plan_info_init(&info);
  CHECK(tp_plan_get_info(plan, &info) == TP_OK);
  return info.target;
}

/* Whether two plans share a victim. */
static int share_a_victim(const tp_plan* a, const tp_plan* b) {
  const tp_victim* va = NULL;
  const tp_victim* vb = NULL;
  size_t na = 0;
  size_t nb = 0;
  CHECK(tp_plan_get_victims(a, &va, &na) == TP_OK && tp_plan_get_victims(b, &vb, &nb) == TP_OK);
  for (size_t i = 0; i < na; ++i) {
    for (size_t j = 0; j < nb; ++j) {
      if (va[i].id == vb[j].id) return 1;
    }
  }
  return 0;
}

/* Two preemptors that would each take the same room when asked alone take two rooms together;
 * nominations are kept, resumed and forgotten as the header says; bad input changes nothing. */
static void test_queue(void) {
  tp_cluster* cluster = make_cluster();
  tp_cluster* other = make_cluster();
  tp_queue* queue = tp_queue_create();
  tp_workload a;
  tp_workload b;
  tp_workload bad;
  tp_plan_options options;
  tp_plan* alone_a = NULL;
  tp_plan* alone_b = NULL;
  const tp_queued_plan* plans = NULL;
  const tp_queued_plan* first = NULL;
  size_t count = 0;
  uint64_t version = 0;
  char first_target[64];
  fill(cluster);
  tp_plan_options_init(&options);
  CHECK(queue != NULL);
  /* Every NUMA node holds two workloads of priorities summing to 3: equally cheap rooms. */
  preemptor_of(&a, 100, 2, "numa");
  preemptor_of(&b, 101, 2, "numa");
  b.priority = 9;
  {
    const tp_workload* pending[2] = {&b, &a};
    (void)queued(queue, 0);
    CHECK(tp_queue_nomination_count(queue) == 0 && tp_queue_nomination_count(NULL) == 0);
    CHECK(tp_queue_get_plans(NULL, &plans, &count) == TP_E_NULL &&
          tp_queue_get_plans(queue, NULL, &count) == TP_E_NULL &&
          tp_queue_get_plans(queue, &plans, NULL) == TP_E_NULL);

    /* Alone, both would take the same NUMA node. */
    OK(cluster, tp_cluster_plan(cluster, &a, &options, &alone_a));
    OK(cluster, tp_cluster_plan(cluster, &b, &options, &alone_b));
    CHECK(strcmp(target_of(alone_a), target_of(alone_b)) == 0 && share_a_victim(alone_a, alone_b));

    /* Bad calls change nothing (the queue has no outcome yet). */
    version = state_version(cluster, NULL);
    CHECK(tp_cluster_plan_queue(NULL, queue, pending, 2, &options) == TP_E_NULL);
    EXPECT(cluster, tp_cluster_plan_queue(cluster, NULL, pending, 2, &options), TP_E_NULL,
           "queue is NULL");
    EXPECT(cluster, tp_cluster_plan_queue(cluster, queue, NULL, 2, &options), TP_E_NULL,
           "preemptors is NULL");
    EXPECT(cluster, tp_cluster_plan_queue(cluster, queue, pending, 2, NULL), TP_E_NULL, "options");
    (void)queued(queue, 0);

    /* Together: priority order (a first), two rooms, no victim twice. */
    OK(cluster, tp_cluster_plan_queue(cluster, queue, pending, 2, &options));
    plans = queued(queue, 2);
    CHECK(plans != NULL);
    if (plans == NULL) return;
    CHECK(plans[0].preemptor == 100 && plans[1].preemptor == 101);
    CHECK(plans[0].status == TP_NOMINATION_PLANNED && plans[1].status == TP_NOMINATION_PLANNED);
    CHECK(strcmp(target_of(plans[0].plan), target_of(alone_a)) == 0);
    CHECK(strcmp(target_of(plans[0].plan), target_of(plans[1].plan)) != 0);
    CHECK(!share_a_victim(plans[0].plan, plans[1].plan));
    expect_victims(plans[0].plan, 2);
    expect_victims(plans[1].plan, 2);
    CHECK(tp_queue_nomination_count(queue) == 2);
    CHECK(state_version(cluster, NULL) == version); /* read-only on the cluster */
    snprintf(first_target, sizeof first_target, "%s", target_of(plans[0].plan));

    /* A bad preemptor fails the whole call, by index, and the queue keeps its outcomes. */
    bad = a;
    bad.replica_scope.level = "socket";
    pending[1] = &bad;
    EXPECT(cluster, tp_cluster_plan_queue(cluster, queue, pending, 2, &options), TP_E_INVALID,
           "preemptors[1]: preemptor 100 'serving': replica scope: "
           "unknown topology level 'socket'");
    pending[1] = NULL;
    EXPECT(cluster, tp_cluster_plan_queue(cluster, queue, pending, 2, &options), TP_E_NULL,
           "preemptors[1]: preemptor is NULL");
    bad = a;
    bad.struct_size = 8;
    pending[1] = &bad;
    EXPECT(cluster, tp_cluster_plan_queue(cluster, queue, pending, 2, &options), TP_E_ABI,
           "tp_workload_init");
    pending[1] = &a;
    options.solver = 7;
    EXPECT(cluster, tp_cluster_plan_queue(cluster, queue, pending, 2, &options), TP_E_INVALID,
           "tp_solver");
    options.solver = TP_SOLVER_BRANCH_AND_BOUND;
    EXPECT(other, tp_cluster_plan_queue(other, queue, pending, 2, &options), TP_E_STATE,
           "another cluster");
    CHECK(queued(queue, 2) == plans && tp_queue_nomination_count(queue) == 2);

    /* Nothing moved: both nominations are kept. */
    OK(cluster, tp_cluster_plan_queue(cluster, queue, pending, 2, &options));
    plans = queued(queue, 2);
    if (plans == NULL) return;
    CHECK(plans[0].status == TP_NOMINATION_KEPT && plans[1].status == TP_NOMINATION_KEPT);
    CHECK(strcmp(target_of(plans[0].plan), first_target) == 0);

    /* One victim of a's nomination is gone (its eviction is under way): the rest resumes at the
     * same room, and the freed GPU counts for nobody else. */
    {
      const tp_victim* victims = NULL;
      tp_plan_info info;
      CHECK(tp_plan_get_victims(plans[0].plan, &victims, &count) == TP_OK && count == 2);
      OK(cluster, tp_cluster_workload_finish(cluster, victims[0].id));
      OK(cluster, tp_cluster_plan_queue(cluster, queue, pending, 2, &options));
      plans = queued(queue, 2);
      if (plans == NULL) return;
      CHECK(plans[0].status == TP_NOMINATION_RESUMED && plans[0].moved_count > 0);
      CHECK(plans[0].moved_count == 0 || strstr(first_target, plans[0].moved[0]) != NULL ||
            strstr(plans[0].moved[0], first_target) != NULL);
      expect_victims(plans[0].plan, 1);
      tp_plan_info_init(&info);
      CHECK(tp_plan_get_info(plans[0].plan, &info) == TP_OK);
      CHECK(info.status == TP_PLAN_FEASIBLE && strcmp(info.target, first_target) == 0);
      CHECK(plans[1].status == TP_NOMINATION_KEPT && !share_a_victim(plans[0].plan, plans[1].plan));
    }

    /* Listed twice, or already running: rejected on its own; the others are planned as usual. */
    {
      tp_workload running;
      const tp_workload* three[3] = {&a, &b, &a};
      preemptor_of(&running, 3, 1, "numa");
      OK(cluster, tp_cluster_plan_queue(cluster, queue, three, 3, &options));
      plans = queued(queue, 3);
      if (plans == NULL) return;
      CHECK(plans[0].preemptor == 100 && plans[0].status == TP_NOMINATION_KEPT);
      CHECK(plans[1].preemptor == 100 && plans[1].status == TP_NOMINATION_REJECTED &&
            strstr(plans[1].error, "more than once") != NULL);
      CHECK(plans[2].preemptor == 101 && plans[2].status == TP_NOMINATION_KEPT);
      three[2] = &running;
      OK(cluster, tp_cluster_plan_queue(cluster, queue, three, 3, &options));
      plans = queued(queue, 3);
      if (plans == NULL) return;
      /* Ties of priority go by id: workload 3 comes first. */
      CHECK(plans[0].preemptor == 3 && plans[0].status == TP_NOMINATION_REJECTED &&
            strstr(plans[0].error, "already running") != NULL);
      CHECK(plans[1].status == TP_NOMINATION_KEPT && plans[2].status == TP_NOMINATION_KEPT);
      EXPECT(cluster, tp_cluster_commit(cluster, plans[0].plan), TP_E_INVALID, "infeasible");
    }

    /* Other options: the nominations were priced under another cost, so both are planned anew. */
    options.solver = TP_SOLVER_GREEDY;
    OK(cluster, tp_cluster_plan_queue(cluster, queue, pending, 2, &options));
    plans = queued(queue, 2);
    if (plans == NULL) return;
    CHECK(plans[0].status == TP_NOMINATION_PLANNED && plans[1].status == TP_NOMINATION_PLANNED);
    options.solver = TP_SOLVER_BRANCH_AND_BOUND;
    OK(cluster, tp_cluster_plan_queue(cluster, queue, pending, 2, &options));

    /* Committed in result order, both land; a preemptor not listed any more loses its
     * nomination. */
    plans = queued(queue, 2);
    if (plans == NULL) return;
    first = plans;
    OK(cluster, tp_cluster_commit(cluster, first[0].plan));
    OK(cluster, tp_cluster_commit(cluster, first[1].plan));
    CHECK(tp_cluster_workload_running(cluster, 100) == 1 &&
          tp_cluster_workload_running(cluster, 101) == 1);
    OK(cluster, tp_cluster_plan_queue(cluster, queue, NULL, 0, &options));
    CHECK(tp_queue_get_plans(queue, &plans, &count) == TP_OK && count == 0 && plans == NULL);
    CHECK(tp_queue_nomination_count(queue) == 0);
  }

  /* Infeasible (5 GPUs in one node of 4), and a reseal forgets the nominations. */
  {
    tp_workload big;
    const tp_workload* pending[2] = {&big, &a};
    preemptor_of(&big, 102, 5, "node");
    preemptor_of(&a, 103, 1, "numa");
    OK(cluster, tp_cluster_plan_queue(cluster, queue, pending, 2, &options));
    plans = queued(queue, 2);
    if (plans == NULL) return;
    CHECK(plans[0].preemptor == 102 && plans[0].status == TP_NOMINATION_INFEASIBLE);
    CHECK(plans[1].preemptor == 103 && plans[1].status == TP_NOMINATION_PLANNED);
    OK(cluster, tp_cluster_plan_queue(cluster, queue, pending, 2, &options));
    plans = queued(queue, 2);
    if (plans == NULL) return;
    CHECK(plans[1].status == TP_NOMINATION_KEPT);
    add_node(cluster, "rack1", 4);
    OK(cluster, tp_cluster_seal(cluster));
    OK(cluster, tp_cluster_plan_queue(cluster, queue, pending, 2, &options));
    plans = queued(queue, 2);
    if (plans == NULL) return;
    CHECK(plans[1].status == TP_NOMINATION_PLANNED);
  }
  tp_plan_destroy(alone_a);
  tp_plan_destroy(alone_b);
  tp_queue_destroy(queue);
  tp_queue_destroy(NULL);
  tp_cluster_destroy(other);
  tp_cluster_destroy(cluster);
}

int main(void) {
  test_versions_and_null();
  test_topology_errors();
  test_workload_events();
  test_plan_commit_replan();
  test_topology_changes_keep_workloads();
  test_distinct_hosts();
  test_queue();
  if (failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return EXIT_FAILURE;
  }
  printf("topopreempt C API: all checks passed (ABI %u, library %s)\n", tp_abi_version(),
         tp_library_version());
  return EXIT_SUCCESS;
}
