/* SPDX-License-Identifier: MIT */
/*
 * Unit test of the planner behind preempt/topopreempt, through its plain-data C interface and
 * without Slurm: hand-made snapshots in, plan kinds and victim ranks out. Written in C on
 * purpose: it proves the interface is usable from the plugin's language.
 * Built and run by integrations/slurm/build-plugin.sh; exit status 0 when every check passes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_slurm_bridge.h"

static int failures = 0;
static int checks = 0;
static int errors_logged = 0;
static int infos_logged = 0;
static char last_error[1024];
static char last_info[1024];
static int debugs_logged = 0;
static char last_debug[1024];
/* When > 0, every info line takes this long: a plan whose logging is slow is a slow plan, which
 * is how the per-cycle budget is tested without depending on the solver's speed. */
static int slow_info_ms = 0;

static void capture_log(int severity, const char* message) {
  if (severity == 0) {
    ++debugs_logged;
    snprintf(last_debug, sizeof last_debug, "%s", message);
  } else if (severity == 1 && slow_info_ms > 0) {
    usleep((useconds_t)slow_info_ms * 1000);
  }
  if (severity >= 2) {
    ++errors_logged;
    snprintf(last_error, sizeof last_error, "%s", message);
  } else if (severity == 1) {
    ++infos_logged;
    snprintf(last_info, sizeof last_info, "%s", message);
  }
}

#define CHECK(condition)                                                     \
  do {                                                                       \
    ++checks;                                                                \
    if (!(condition)) {                                                      \
      ++failures;                                                            \
      fprintf(stderr, "%s:%d: FAILED %s\n", __FILE__, __LINE__, #condition); \
    }                                                                        \
  } while (0)

/* Two leaf switches (s0: n0 n1, s1: n2 n3) under "top"; 2 sockets x 4 cores, GPUs 0-3 on
 * socket 0 and 4-7 on socket 1. */
static tp_switch_t switches[3] = {{"s0", 0, 2}, {"s1", 0, 2}, {"top", 1, -1}};
static tp_node_t nodes[4];

static void make_nodes(void) {
  const char* names[4] = {"n0", "n1", "n2", "n3"};
  for (int n = 0; n < 4; ++n) {
    memset(&nodes[n], 0, sizeof nodes[n]);
    nodes[n].name = names[n];
    nodes[n].leaf_switch = n < 2 ? 0 : 1;
    nodes[n].sockets = 2;
    nodes[n].cores_per_socket = 4;
    nodes[n].gpus = 8;
    for (int g = 0; g < 8; ++g) nodes[n].gpu_socket[g] = g / 4;
  }
}

static tp_job_t jobs[64];
static tp_holding_t holdings[64];
static int job_count = 0;
static int holding_count = 0;

/* A running job holding `mask` GPUs (and one core per GPU on their sockets) on `node`. */
static void add_job(uint32_t id, int priority, int preemptible, int node, uint64_t mask) {
  tp_job_t* job = &jobs[job_count++];
  tp_holding_t* holding = &holdings[holding_count];
  memset(job, 0, sizeof *job);
  memset(holding, 0, sizeof *holding);
  job->job_id = id;
  job->name = "job";
  job->partition = "p";
  job->priority = priority;
  job->preemptible = preemptible;
  job->first_holding = holding_count++;
  job->holding_count = 1;
  holding->node = node;
  holding->gpu_mask = mask;
  for (int g = 0; g < 8; ++g) {
    if (mask >> g & 1U) holding->cores_on_socket[g / 4]++;
  }
}

/* An empty cluster: no running job. */
static void clear_jobs(void) {
  job_count = 0;
  holding_count = 0;
}

/* A full n[from..3]: a protected (non-preemptible) 4-GPU job on each socket. */
static void protect_nodes_from(int from) {
  for (int n = from; n < 4; ++n) {
    add_job(400 + n, 9, 0, n, 0x0F);
    add_job(500 + n, 9, 0, n, 0xF0);
  }
}

static tp_snapshot_t snapshot(void) {
  tp_snapshot_t s = {switches, 3, nodes, 4, jobs, job_count, holdings, holding_count, 1000.0, 0};
  return s;
}

static tp_request_t socket_request(uint32_t id) {
  tp_request_t r;
  memset(&r, 0, sizeof r);
  r.job_id = id;
  r.name = "preemptor";
  r.priority = 10;
  r.nodes = 1;
  r.gpus_per_node = 4;
  r.cores_per_node = 4;
  r.replica_scope = TP_SCOPE_SOCKET;
  return r;
}

static int count_lines(const char* path) {
  FILE* in = fopen(path, "r");
  int lines = 0;
  if (!in) return 0;
  for (int c; (c = fgetc(in)) != EOF;) lines += c == '\n';
  fclose(in);
  return lines;
}

/* The last line of `path` (the latest plan in the plan log) into `line`; "" if none. */
static const char* last_line(const char* path, char* line, int size) {
  FILE* in = fopen(path, "r");
  char buffer[4096];
  line[0] = '\0';
  if (!in) return line;
  while (fgets(buffer, sizeof buffer, in)) snprintf(line, (size_t)size, "%s", buffer);
  fclose(in);
  return line;
}

static tp_engine_t* engine_with(const char* dir, const char* text) {
  char path[512];
  snprintf(path, sizeof path, "%s/topopreempt.conf", dir);
  FILE* out = fopen(path, "w");
  fputs(text, out);
  fclose(out);
  return tp_engine_create(path, capture_log);
}

int main(void) {
  char dir[] = "/tmp/tp-engine-test.XXXXXX";
  char config[1024], plan_log[600];
  if (!mkdtemp(dir)) return 2;
  snprintf(plan_log, sizeof plan_log, "%s/plans.jsonl", dir);
  make_nodes();

  /* A malformed configuration is rejected with the line named; no engine, no crash. */
  errors_logged = 0;
  CHECK(engine_with(dir, "solver = magic\n") == NULL);
  CHECK(errors_logged == 1 && strstr(last_error, ":1:") && strstr(last_error, "solver"));
  CHECK(engine_with(dir, "colour = blue\n") == NULL);
  CHECK(strstr(last_error, "unknown key") != NULL);
  CHECK(engine_with(dir, "priority_offset = -1\n") == NULL);
  /* A value that is not a number names the key and says so (not the library's "stoll"). */
  CHECK(engine_with(dir, "time_limit_ms = abc\n") == NULL);
  CHECK(strstr(last_error, "time_limit_ms is not a number") != NULL && !strstr(last_error, "sto"));
  CHECK(engine_with(dir, "node_limit = 12x\n") == NULL);
  CHECK(strstr(last_error, "node_limit is not a number") != NULL);
  CHECK(engine_with(dir, "priority_offset = \n") == NULL);
  CHECK(strstr(last_error, "priority_offset is not a number") != NULL);
  CHECK(engine_with(dir, "cycle_budget_ms = 0\n") == NULL);
  CHECK(strstr(last_error, "cycle_budget_ms must be > 0") != NULL);

  /* Who may preempt whom: partition tiers by default, QOS Preempt= with `relation = qos`. */
  CHECK(engine_with(dir, "relation = tiers\n") == NULL);
  CHECK(strstr(last_error, "relation must be partition_prio or qos") != NULL);
  {
    tp_engine_t* qos = engine_with(dir, "relation = qos\n");
    tp_engine_t* tiers = engine_with(dir, "solver = greedy\n");
    CHECK(qos != NULL && tp_engine_relation_is_qos(qos) == 1);
    CHECK(tiers != NULL && tp_engine_relation_is_qos(tiers) == 0);
    tp_engine_destroy(qos);
    tp_engine_destroy(tiers);
  }

  /* A plan log that cannot be opened is an error at start, not a silent loss later. */
  errors_logged = 0;
  {
    tp_engine_t* no_log = engine_with(dir, "plan_log = /nonexistent-dir/plans.jsonl\n");
    CHECK(no_log != NULL);
    CHECK(errors_logged == 1 && strstr(last_error, "/nonexistent-dir/plans.jsonl"));
    /* The info line that follows must not name the unusable path as the plan log (N2). */
    CHECK(strstr(last_info, "solver") && !strstr(last_info, "/nonexistent-dir"));
    tp_engine_destroy(no_log);
  }

  snprintf(config, sizeof config,
           "# test\nsolver = branch_and_bound\ncost_model = priority_weighted\n"
           "priority_offset = 1\nplan_log = %s\n"
           "# every plan below is in one cycle; a loaded machine must not run out of budget\n"
           "cycle_budget_ms = 600000\n",
           plan_log);
  tp_engine_t* engine = engine_with(dir, config);
  CHECK(engine != NULL);

  /* Full cluster: n0 socket 0 holds four 1-GPU jobs of priority 1 (cost 2 each, 8 in all);
   * n0 socket 1 one 4-GPU job of priority 4 (cost 5); n1..n3 two 4-GPU jobs of priority 4 or a
   * non-preemptible one. The cheapest free socket: the single priority-4 job on n0 (cost 5). */
  for (int g = 0; g < 4; ++g) add_job(100 + g, 1, 1, 0, UINT64_C(1) << g);
  add_job(104, 4, 1, 0, 0xF0);
  for (int n = 1; n < 4; ++n) {
    add_job(200 + n, 9, 0, n, 0x0F); /* not preemptible */
    add_job(300 + n, 9, 0, n, 0xF0);
  }
  tp_snapshot_t s = snapshot();
  tp_request_t request = socket_request(1);
  CHECK(tp_engine_plan(engine, &s, &request, 42) == TP_PLAN_VICTIMS);
  CHECK(tp_engine_victim_rank(engine, 104) == 0);
  CHECK(tp_engine_victim_rank(engine, 100) == -1);
  CHECK(tp_engine_victim_rank(engine, 201) == -1);
  CHECK(count_lines(plan_log) == 1);

  /* Same preemptor, same state: the cached plan, nothing solved or logged again. */
  CHECK(tp_engine_use_cached(engine, &request, 4, 42) == TP_PLAN_VICTIMS);
  CHECK(tp_engine_victim_rank(engine, 104) == 0);
  CHECK(count_lines(plan_log) == 1);

  /* --switches=1 over two nodes of 4 GPUs: n1, n2 and n3 are fully held by protected jobs, so
   * no leaf switch has two nodes that victims could free: infeasible in the model. The model
   * is stricter than Slurm in places, so stock answers (cons_tres preempts only if useful). */
  tp_request_t gang = socket_request(2);
  gang.nodes = 2;
  gang.replica_scope = TP_SCOPE_NONE;
  gang.one_switch = 1;
  CHECK(tp_engine_plan(engine, &s, &gang, 42) == TP_PLAN_NONE);
  CHECK(tp_engine_victim_rank(engine, 104) == -1);
  CHECK(count_lines(plan_log) == 2);

  /* Plans are cached per job: after job 2's plan, job 1's is still there for this state, so
   * a pass alternating between pending jobs solves each once. A new state drops them all. */
  CHECK(tp_engine_use_cached(engine, &request, 4, 42) == TP_PLAN_VICTIMS);
  CHECK(tp_engine_victim_rank(engine, 104) == 0);
  CHECK(tp_engine_use_cached(engine, &gang, 4, 42) == TP_PLAN_NONE);
  CHECK(tp_engine_victim_rank(engine, 104) == -1);
  CHECK(count_lines(plan_log) == 2);
  CHECK(tp_engine_use_cached(engine, &request, 4, 43) == -1);

  /* The same job with other options (backfill's exclusions) is another request. */
  {
    unsigned char only_n1_n2_n3[4] = {0, 1, 1, 1};
    tp_request_t narrowed = request;
    narrowed.eligible = only_n1_n2_n3;
    CHECK(tp_engine_use_cached(engine, &narrowed, 4, 42) == -1);
    /* n0 holds the only preemptible jobs; without it nothing can be freed: stock answers. */
    CHECK(tp_engine_plan(engine, &s, &narrowed, 42) == TP_PLAN_NONE);
  }

  /* Fits as is (an empty n3 socket): no plan, stock answers. */
  job_count = 0;
  holding_count = 0;
  add_job(104, 4, 1, 0, 0xF0);
  s = snapshot();
  CHECK(tp_engine_plan(engine, &s, &request, 44) == TP_PLAN_NONE);

  /* A job holding different shares on two nodes (4 GPUs on n0, a zero share on n1) cannot be a
   * gang of identical replicas: it is counted but never evicted. It holds n0's socket 0, a
   * priority-1 job holds socket 1, and n1..n3 are protected: the plan must take job 600. */
  job_count = 0;
  holding_count = 0;
  for (int n = 1; n < 4; ++n) {
    add_job(400 + n, 9, 0, n, 0x0F);
    add_job(500 + n, 9, 0, n, 0xF0);
  }
  add_job(600, 1, 1, 0, 0xF0);
  {
    tp_job_t* split = &jobs[job_count++];
    memset(split, 0, sizeof *split);
    split->job_id = 700;
    split->name = "split";
    split->partition = "p";
    split->priority = 1;
    split->preemptible = 1;
    split->first_holding = holding_count;
    split->holding_count = 2;
    memset(&holdings[holding_count], 0, 2 * sizeof holdings[0]);
    holdings[holding_count].node = 0;
    holdings[holding_count].gpu_mask = 0x0F; /* 4 GPUs on n0 */
    holdings[holding_count].cores_on_socket[0] = 4;
    holdings[holding_count + 1].node = 1;
    holding_count += 2;
  }
  s = snapshot();
  CHECK(tp_engine_plan(engine, &s, &request, 45) == TP_PLAN_VICTIMS);
  CHECK(tp_engine_victim_rank(engine, 600) == 0);
  CHECK(tp_engine_victim_rank(engine, 700) == -1);

  /* A GPU the node does not have: caught at the C boundary, logged, stock behaviour. */
  errors_logged = 0;
  tp_holding_t saved = holdings[0];
  holdings[0].gpu_mask = UINT64_C(1) << 40; /* GPU 40 does not exist */
  s = snapshot();
  CHECK(tp_engine_plan(engine, &s, &request, 46) == TP_PLAN_NONE);
  CHECK(errors_logged == 1);
  holdings[0] = saved;

  /* Excluded nodes (backfill's reservations, -x, partition, features) are never planned on:
   * the cheapest victim (job 801 on n1, cost 2) is not used when n1 is excluded; job 104 on n0
   * (cost 5) is. */
  clear_jobs();
  add_job(104, 4, 1, 0, 0xF0);
  add_job(105, 9, 0, 0, 0x0F);
  add_job(801, 1, 1, 1, 0xF0);
  add_job(802, 9, 0, 1, 0x0F);
  protect_nodes_from(2);
  s = snapshot();
  CHECK(tp_engine_plan(engine, &s, &request, 50) == TP_PLAN_VICTIMS);
  CHECK(tp_engine_victim_rank(engine, 801) == 0 && tp_engine_victim_rank(engine, 104) == -1);
  {
    unsigned char not_n1[4] = {1, 0, 1, 1};
    tp_request_t excluded = request;
    excluded.eligible = not_n1;
    CHECK(tp_engine_plan(engine, &s, &excluded, 50) == TP_PLAN_VICTIMS);
    CHECK(tp_engine_victim_rank(engine, 104) == 0 && tp_engine_victim_rank(engine, 801) == -1);
  }

  /* -N2 means two distinct nodes. n0 holds two priority-0 4-GPU jobs (cost 1 each); n1, n2
   * and n3 one preemptible job each on socket 1 (priority 1, 4 and 2: cost 2, 5 and 3) beside
   * a protected one. Evicting both n0 jobs (cost 2) would free room for both replicas on n0;
   * on distinct nodes the cheapest is one n0 job and n1's (cost 3), and the plan log's
   * placement names n0 and n1. With n1 ineligible no replica lands there: one n0 job and n3's
   * (cost 4). With only n0 eligible there are not two nodes: infeasible in the model itself,
   * not merely refused by the cons_tres check. */
  clear_jobs();
  add_job(1001, 0, 1, 0, 0x0F);
  add_job(1002, 0, 1, 0, 0xF0);
  add_job(1011, 1, 1, 1, 0xF0);
  add_job(1021, 4, 1, 2, 0xF0);
  add_job(1031, 2, 1, 3, 0xF0);
  for (int n = 1; n < 4; ++n) add_job(1100 + n, 9, 0, n, 0x0F);
  s = snapshot();
  {
    char line[4096];
    tp_request_t two = socket_request(5);
    two.nodes = 2;
    two.replica_scope = TP_SCOPE_NONE;
    errors_logged = 0;
    CHECK(tp_engine_plan(engine, &s, &two, 80) == TP_PLAN_VICTIMS);
    CHECK(errors_logged == 0); /* no plan refused by the cons_tres check */
    CHECK((tp_engine_victim_rank(engine, 1001) >= 0) + (tp_engine_victim_rank(engine, 1002) >= 0) ==
          1);
    CHECK(tp_engine_victim_rank(engine, 1011) >= 0);
    CHECK(tp_engine_victim_rank(engine, 1021) == -1 && tp_engine_victim_rank(engine, 1031) == -1);
    last_line(plan_log, line, sizeof line);
    CHECK(strstr(line, "\"preemptor\":5,") && strstr(line, "\"node\":\"n0\"") &&
          strstr(line, "\"node\":\"n1\""));

    unsigned char not_n1[4] = {1, 0, 1, 1};
    two.eligible = not_n1;
    CHECK(tp_engine_plan(engine, &s, &two, 80) == TP_PLAN_VICTIMS);
    CHECK(errors_logged == 0);
    CHECK((tp_engine_victim_rank(engine, 1001) >= 0) + (tp_engine_victim_rank(engine, 1002) >= 0) ==
          1);
    CHECK(tp_engine_victim_rank(engine, 1031) >= 0);
    CHECK(tp_engine_victim_rank(engine, 1011) == -1 && tp_engine_victim_rank(engine, 1021) == -1);
    last_line(plan_log, line, sizeof line);
    CHECK(strstr(line, "\"node\":\"n0\"") && strstr(line, "\"node\":\"n3\"") &&
          !strstr(line, "\"node\":\"n1\""));

    unsigned char only_n0[4] = {1, 0, 0, 0};
    two.eligible = only_n0;
    CHECK(tp_engine_plan(engine, &s, &two, 80) == TP_PLAN_NONE);
    last_line(plan_log, line, sizeof line);
    CHECK(strstr(line, "\"status\":\"infeasible\"") != NULL);
  }

  /* --exclusive: a whole node. n0 holds two preemptible 4-GPU jobs, n1 one preemptible and one
   * protected, n2 and n3 protected jobs. Evicting one job frees 4 GPUs but cons_tres starts an
   * exclusive job only on an empty node: the plan must empty n0 (both jobs). */
  clear_jobs();
  add_job(901, 1, 1, 0, 0x0F);
  add_job(902, 1, 1, 0, 0xF0);
  add_job(903, 1, 1, 1, 0xF0);
  add_job(904, 9, 0, 1, 0x0F);
  for (int n = 2; n < 4; ++n) add_job(400 + n, 9, 0, n, 0x0F);
  s = snapshot();
  {
    tp_request_t exclusive = socket_request(3);
    exclusive.replica_scope = TP_SCOPE_NONE;
    exclusive.cores_per_node = 1;
    CHECK(tp_engine_plan(engine, &s, &exclusive, 60) == TP_PLAN_NONE); /* fits on n2's socket 1 */
    for (int n = 2; n < 4; ++n) add_job(500 + n, 9, 0, n, 0xF0);
    s = snapshot();
    CHECK(tp_engine_plan(engine, &s, &exclusive, 61) == TP_PLAN_VICTIMS);
    /* Without --exclusive one 4-GPU low job (cost 2) is enough: 901, 902 or 903. */
    CHECK((tp_engine_victim_rank(engine, 901) == 0) + (tp_engine_victim_rank(engine, 902) == 0) +
              (tp_engine_victim_rank(engine, 903) == 0) ==
          1);
    exclusive.exclusive = 1;
    CHECK(tp_engine_plan(engine, &s, &exclusive, 61) == TP_PLAN_VICTIMS);
    CHECK(tp_engine_victim_rank(engine, 901) >= 0 && tp_engine_victim_rank(engine, 902) >= 0);
    CHECK(tp_engine_victim_rank(engine, 903) == -1);
  }

  /* Memory (CR_Core_Memory): n0's socket 0 has its 4 GPUs free, but a 1-GPU job on socket 1
   * holds 50 GB of n0's 64 GB; every other socket is protected. Without memory the job fits as
   * is; with 40 GB per node the plan must evict the memory holder. */
  clear_jobs();
  add_job(950, 1, 1, 0, 0x10);
  holdings[holding_count - 1].memory_mb = 50000;
  protect_nodes_from(1);
  for (int n = 0; n < 4; ++n) nodes[n].memory_mb = 64000;
  s = snapshot();
  {
    tp_request_t memory = socket_request(4);
    memory.memory_per_node_mb = 40000;
    CHECK(tp_engine_plan(engine, &s, &memory, 70) == TP_PLAN_NONE);
    s.memory_modelled = 1;
    CHECK(tp_engine_plan(engine, &s, &memory, 71) == TP_PLAN_VICTIMS);
    CHECK(tp_engine_victim_rank(engine, 950) == 0);
    memory.memory_per_node_mb = 10000; /* fits next to it */
    CHECK(tp_engine_plan(engine, &s, &memory, 71) == TP_PLAN_NONE);
  }

  /* A job that fits as it is, most of a queue, is logged at debug level, not info (N1). */
  clear_jobs();
  add_job(104, 4, 1, 0, 0xF0);
  s = snapshot();
  infos_logged = 0;
  debugs_logged = 0;
  CHECK(tp_engine_plan(engine, &s, &request, 90) == TP_PLAN_NONE);
  CHECK(infos_logged == 0 && debugs_logged == 1 && strstr(last_debug, "no_preemption_needed"));

  /* A blocked job: -N3 --exclusive on n0..n2, where n0 holds a job nothing may preempt. The
   * verdict (infeasible) is kept while nothing on n0..n2 changes: a job starting on n3, which
   * it may not use, is a new state but no new plan (no plan log line, a debug line). A change
   * on n1 plans it again. */
  clear_jobs();
  add_job(1200, 9, 0, 0, 0x01);
  add_job(1201, 1, 1, 1, 0x01);
  s = snapshot();
  {
    unsigned char n0_n1_n2[4] = {1, 1, 1, 0};
    tp_request_t blocked = socket_request(6);
    blocked.nodes = 3;
    blocked.replica_scope = TP_SCOPE_NONE;
    blocked.gpus_per_node = 8;
    blocked.cores_per_node = 8;
    blocked.exclusive = 1;
    blocked.eligible = n0_n1_n2;
    char line[4096];
    const int before = count_lines(plan_log);
    infos_logged = 0;
    CHECK(tp_engine_plan(engine, &s, &blocked, 100) == TP_PLAN_NONE);
    CHECK(count_lines(plan_log) == before + 1);
    last_line(plan_log, line, sizeof line);
    CHECK(strstr(line, "\"preemptor\":6,") && strstr(line, "\"status\":\"infeasible\""));
    CHECK(infos_logged == 1 && strstr(last_info, "infeasible (proven)"));
    add_job(1300, 1, 1, 3, 0x0F); /* on n3 */
    s = snapshot();
    CHECK(tp_engine_use_cached(engine, &blocked, 4, 101) == -1); /* a new state */
    debugs_logged = 0;
    CHECK(tp_engine_plan(engine, &s, &blocked, 101) == TP_PLAN_NONE);
    CHECK(count_lines(plan_log) == before + 1);
    CHECK(infos_logged == 1 && debugs_logged == 1 && strstr(last_debug, "kept"));
    /* The order of job_list does not matter: the same jobs, listed otherwise. */
    {
      tp_job_t swapped = jobs[0];
      jobs[0] = jobs[2];
      jobs[2] = swapped;
      s = snapshot();
      CHECK(tp_engine_plan(engine, &s, &blocked, 102) == TP_PLAN_NONE);
      CHECK(count_lines(plan_log) == before + 1);
    }
    add_job(1301, 1, 1, 1, 0x02); /* on n1 */
    s = snapshot();
    CHECK(tp_engine_plan(engine, &s, &blocked, 103) == TP_PLAN_NONE);
    CHECK(count_lines(plan_log) == before + 2);
    /* Other options are another request, planned on their own: with n3 eligible too, n1, n2
     * and n3 can be emptied (jobs 1201, 1301 and 1300). */
    unsigned char all[4] = {1, 1, 1, 1};
    blocked.eligible = all;
    CHECK(tp_engine_plan(engine, &s, &blocked, 103) == TP_PLAN_VICTIMS);
    CHECK(tp_engine_victim_rank(engine, 1300) >= 0 && tp_engine_victim_rank(engine, 1301) >= 0 &&
          tp_engine_victim_rank(engine, 1201) >= 0);
    CHECK(count_lines(plan_log) == before + 3);
  }

  /* Why a job gets stock behaviour is told at info level once per job and reason. */
  infos_logged = 0;
  tp_engine_tell_stock(engine, 77, "node count is a range (-N<min>-<max>)");
  tp_engine_tell_stock(engine, 77, "node count is a range (-N<min>-<max>)");
  CHECK(infos_logged == 1 && strstr(last_info, "JobId=77") && strstr(last_info, "stock"));
  tp_engine_tell_stock(engine, 77, "--switches greater than 1");
  tp_engine_tell_stock(engine, 78, "--switches greater than 1");
  CHECK(infos_logged == 3);

  tp_engine_destroy(engine);

  /* The per-cycle planning budget (20 ms): a plan whose info line takes 30 ms spends it, so the
   * next job in the same cycle is not planned (stock, told once, no plan log line); the next
   * cycle plans it. */
  snprintf(config, sizeof config, "cycle_budget_ms = 20\nplan_log = %s\n", plan_log);
  engine = engine_with(dir, config);
  CHECK(engine != NULL);
  clear_jobs();
  for (int g = 0; g < 4; ++g) add_job(100 + g, 1, 1, 0, UINT64_C(1) << g);
  add_job(104, 4, 1, 0, 0xF0);
  protect_nodes_from(1);
  s = snapshot();
  {
    tp_request_t first = socket_request(11), second = socket_request(12);
    const int before = count_lines(plan_log);
    tp_engine_set_cycle(engine, 1);
    slow_info_ms = 30;
    CHECK(tp_engine_plan(engine, &s, &first, 200) == TP_PLAN_VICTIMS);
    slow_info_ms = 0;
    CHECK(count_lines(plan_log) == before + 1);
    infos_logged = 0;
    CHECK(tp_engine_plan(engine, &s, &second, 200) == TP_PLAN_NONE);
    CHECK(tp_engine_victim_rank(engine, 104) == -1);
    CHECK(count_lines(plan_log) == before + 1);
    CHECK(infos_logged == 1 && strstr(last_info, "JobId=12") &&
          strstr(last_info, "cycle_budget_ms"));
    CHECK(tp_engine_use_cached(engine, &second, 4, 200) == -1); /* not cached: asked again later */
    CHECK(tp_engine_plan(engine, &s, &second, 200) == TP_PLAN_NONE);
    CHECK(infos_logged == 1); /* said once */
    tp_engine_set_cycle(engine, 2);
    CHECK(tp_engine_plan(engine, &s, &second, 200) == TP_PLAN_VICTIMS);
    CHECK(tp_engine_victim_rank(engine, 104) == 0);
    CHECK(count_lines(plan_log) == before + 2);
  }
  tp_engine_destroy(engine);

  if (failures == 0) remove(plan_log);
  snprintf(config, sizeof config, "%s/topopreempt.conf", dir);
  remove(config);
  rmdir(dir);
  printf("test_engine: %d checks, %d failed\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
