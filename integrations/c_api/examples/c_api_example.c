/* SPDX-License-Identifier: MIT */
/* The C interface in one page (docs/c-api.md walks through it; ctest builds and runs it):
 * a scheduler mirrors its cluster into a tp_cluster (topology by paths, then pods with their
 * exact GPUs), asks what to preempt for a NUMA-pinned inference server, commits the plan, and
 * keeps its mirror when a node joins. */
#include <stdio.h>
#include <stdlib.h>

#include "topopreempt_c.h"

/* Every call returns a status; the cluster says what went wrong. */
#define TRY(call)                                                     \
  do {                                                                \
    tp_status status_ = (call);                                       \
    if (status_ != TP_OK) {                                           \
      fprintf(stderr, "%s: %s: %s\n", #call, tp_status_name(status_), \
              tp_cluster_last_error(cluster));                        \
      exit(EXIT_FAILURE);                                             \
    }                                                                 \
  } while (0)

static tp_cluster* cluster;

/* A node as a DRA driver describes it: 2 NUMA nodes of 32 cores, 2 GPUs under a PCIe root each. */
static void add_node(const char* rack, const char* node) {
  static const tp_amount cores = {"cpu_milli", 32000};
  static const tp_amount gpu = {"gpu_milli", 1000};
  char path[128];
  snprintf(path, sizeof path, "%s/%s", rack, node);
  TRY(tp_cluster_add_domain(cluster, path, "node", NULL, 0));
  for (int numa = 0; numa < 2; ++numa) {
    snprintf(path, sizeof path, "%s/%s/numa%d", rack, node, numa);
    TRY(tp_cluster_add_domain(cluster, path, "numa", &cores, 1));
    snprintf(path, sizeof path, "%s/%s/numa%d/pci0", rack, node, numa);
    TRY(tp_cluster_add_domain(cluster, path, "pcie", NULL, 0));
    for (int g = 0; g < 2; ++g) {
      snprintf(path, sizeof path, "%s/%s/numa%d/pci0/gpu%d", rack, node, numa, g);
      TRY(tp_cluster_add_domain(cluster, path, "gpu", &gpu, 1));
    }
  }
}

/* A bound pod holding one GPU, addressed below its node as the pod's device list names it. */
static void pod_started(uint64_t id, int priority, const char* node, const char* gpu_path,
                        double seconds_since_checkpoint) {
  tp_workload pod;
  tp_placement_entry entry = {0, node, gpu_path, NULL, 0}; /* no amounts: the whole GPU */
  tp_workload_init(&pod);
  pod.id = id;
  pod.priority = priority;
  pod.whole_devices = 1;
  pod.seconds_since_checkpoint = seconds_since_checkpoint;
  TRY(tp_cluster_workload_start(cluster, &pod, &entry, 1));
}

int main(void) {
  static const char* const levels[] = {"cluster", "rack", "node", "numa", "pcie", "gpu"};
  static const tp_resource resources[] = {{"gpu_milli", TP_RESOURCE_DEVICE},
                                          {"cpu_milli", TP_RESOURCE_POOLED}};
  static const char* const nodes[] = {"node-a", "node-b"};
  static const char* const gpus[] = {"numa0/pci0/gpu0", "numa0/pci0/gpu1", "numa1/pci0/gpu0",
                                     "numa1/pci0/gpu1"};
  tp_schema schema;
  tp_workload serving;
  tp_plan_options options;
  tp_plan* plan = NULL;
  tp_plan_info info;
  const tp_victim* victims = NULL;
  const tp_plan_entry* entries = NULL;
  size_t victim_count = 0;
  size_t entry_count = 0;
  uint64_t id = 1;

  printf("topopreempt %s, C ABI %u\n", tp_library_version(), tp_abi_version());
  cluster = tp_cluster_create();
  if (cluster == NULL) return EXIT_FAILURE;

  /* 1. The topology, once: levels, resources, then domains by path; seal. */
  tp_schema_init(&schema);
  schema.levels = levels;
  schema.level_count = 6;
  schema.device_level = "gpu";
  schema.host_level = "node";
  schema.resources = resources;
  schema.resource_count = 2;
  TRY(tp_cluster_define(cluster, &schema));
  TRY(tp_cluster_add_domain(cluster, "rack1", "rack", NULL, 0));
  for (int n = 0; n < 2; ++n) add_node("rack1", nodes[n]);
  TRY(tp_cluster_seal(cluster));

  /* 2. Events: every GPU busy with a training pod (priority 0 or 1, some work since checkpoint). */
  for (int n = 0; n < 2; ++n) {
    for (int g = 0; g < 4; ++g, ++id)
      pod_started(id, (int)(id % 2), nodes[n], gpus[g], 600.0 * (double)id);
  }

  /* 3. A question: 2 GPUs in one NUMA node for an inference server, lost work as the cost. */
  tp_workload_init(&serving);
  serving.id = 100;
  serving.name = "llm-serving";
  serving.priority = 10;
  serving.whole_devices = 2;
  serving.replica_scope.mode = TP_SCOPE_GUARANTEED;
  serving.replica_scope.level = "numa";
  tp_plan_options_init(&options);
  tp_cost_term_init(&options.cost[0], TP_COST_LOST_WORK);
  TRY(tp_cluster_plan(cluster, &serving, &options, &plan));

  tp_plan_info_init(&info);
  TRY(tp_plan_get_info(plan, &info));
  TRY(tp_plan_get_victims(plan, &victims, &victim_count));
  TRY(tp_plan_get_placement(plan, &entries, &entry_count));
  printf("status %d, cost %.0f GPU-seconds (lower bound %.0f), target %s on %s\n", info.status,
         info.cost, info.lower_bound, info.target, info.target_host);
  for (size_t v = 0; v < victim_count; ++v) {
    printf("  evict pod %llu (cost %.0f)\n", (unsigned long long)victims[v].id, victims[v].cost);
  }
  for (size_t e = 0; e < entry_count; ++e) {
    printf("  replica %u gets %s / %s\n", entries[e].replica, entries[e].host,
           entries[e].host_path);
  }

  /* 4. Evict, bind, and mirror it all at once. */
  TRY(tp_cluster_commit(cluster, plan));
  tp_plan_destroy(plan);

  /* 5. A node joins: add it, seal; the running pods stay where they are. */
  add_node("rack1", "node-c");
  TRY(tp_cluster_seal(cluster));
  serving.id = 101;
  TRY(tp_cluster_plan(cluster, &serving, &options, &plan));
  TRY(tp_plan_get_info(plan, &info));
  printf("after node-c joined: %s on %s\n",
         info.status == TP_PLAN_NO_PREEMPTION_NEEDED ? "no preemption needed" : "preempt",
         info.target_host);
  tp_plan_destroy(plan);
  tp_cluster_destroy(cluster);
  return info.status == TP_PLAN_NO_PREEMPTION_NEEDED ? EXIT_SUCCESS : EXIT_FAILURE;
}
