// SPDX-License-Identifier: MIT

package topopreempt

// The C ABI (integrations/c_api/include/topopreempt_c.h), linked statically. The CI stage
// (and docs/kubernetes.md) set CGO_CFLAGS=-I<repo>/integrations/c_api/include and
// CGO_LDFLAGS=-L<build>/integrations/c_api -L<build>.

/*
#cgo LDFLAGS: -ltopopreempt_c -lstdc++ -lm
#include <stdlib.h>
#include <topopreempt_c.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// Plan is what the library decided, in Go data.
type Plan struct {
	Status      string // "optimal", "feasible", "infeasible", "no_preemption_needed"
	Cost        float64
	Victims     []uint64  // workload ids, each evicted whole
	VictimCosts []float64 // each victim's share of Cost, by position in Victims
	VictimWhy   []string  // the library's reason for each victim, by position in Victims
	Solver      string    // the solver that made the plan ("branch_and_bound", ...)
	LowerBound  float64   // the best proven lower bound on the cost
	Hosts       []string  // the host (node) of each preemptor replica, by replica
	Devices     []Entry   // the preemptor's devices: replica, host and path below the host
	Target      string    // the domain the preemptor lands in
	Explanation string
	Seconds     float64
}

// cstrings owns the C strings of one call, freed together.
type cstrings struct{ ptrs []unsafe.Pointer }

func (c *cstrings) str(s string) *C.char {
	p := C.CString(s)
	c.ptrs = append(c.ptrs, unsafe.Pointer(p))
	return p
}

func (c *cstrings) alloc(n uintptr) unsafe.Pointer {
	if n == 0 {
		n = 1
	}
	p := C.calloc(1, C.size_t(n))
	if p == nil {
		panic("calloc failed")
	}
	c.ptrs = append(c.ptrs, p)
	return p
}

func (c *cstrings) free() {
	for _, p := range c.ptrs {
		C.free(p)
	}
}

func check(cl *C.tp_cluster, st C.tp_status, what string) error {
	if st == C.TP_OK {
		return nil
	}
	return fmt.Errorf("%s: %s: %s", what, C.GoString(C.tp_status_name(st)), C.GoString(C.tp_cluster_last_error(cl)))
}

// Solve builds the model as a fresh C-ABI cluster and asks for a plan (one question, nothing
// kept: the plugin itself keeps a mirror, see mirror.go). A panic on this side of the cgo
// boundary becomes an error: nothing here may crash kube-scheduler.
func Solve(m *Model, opts *Args) (plan *Plan, err error) {
	return SolveWith(m, opts, "")
}

// Solvers are the library's solvers by their C ABI names, the default (the plugin's) first.
var Solvers = []string{"branch_and_bound", "knapsack", "greedy"}

var solverIDs = map[string]C.int32_t{"branch_and_bound": C.TP_SOLVER_BRANCH_AND_BOUND,
	"knapsack": C.TP_SOLVER_KNAPSACK, "greedy": C.TP_SOLVER_GREEDY}

// SolveWith is Solve with a chosen solver (one of Solvers; "" the library's default, as the
// plugin uses), for the what-if tool, which compares solvers on one question.
func SolveWith(m *Model, opts *Args, solver string) (*Plan, error) {
	if _, ok := solverIDs[solver]; !ok && solver != "" {
		return nil, fmt.Errorf("unknown solver %q (want one of %s)", solver, strings.Join(Solvers, ", "))
	}
	return withModelCluster(m, func(cl *cluster) (*Plan, error) {
		return cl.planWith(&m.Preemptor, opts, solver)
	})
}

// withModelCluster loads the model's topology and running workloads into a throwaway C cluster
// and calls use on it, at the C boundary (a panic there becomes an error).
func withModelCluster[T any](m *Model, use func(*cluster) (T, error)) (T, error) {
	return atCBoundary(func() (T, error) {
		var zero T
		cl, err := newCluster(m.Levels, m.Domains)
		if err != nil {
			return zero, err
		}
		defer cl.destroy()
		for i := range m.Workloads {
			if err := cl.start(&m.Workloads[i]); err != nil {
				return zero, err
			}
		}
		return use(cl)
	})
}

// SolvePDBFirst answers the model's question in the PDB-first order (pdb.go) with a solver:
// the plugin's answer for a BuildModel model. pdbs are the PodDisruptionBudgets the model's
// Protected flags were derived from.
func SolvePDBFirst(m *Model, pdbs []*policyv1.PodDisruptionBudget, opts *Args, solver string) (*Plan, PDBOutcome, error) {
	protectedCount := 0
	for i := range m.Workloads {
		if m.Workloads[i].Protected {
			protectedCount++
		}
	}
	return pdbFirst(pdbs, protectedCount, func(allow bool) (*Plan, []*corev1.Pod, error) {
		pass := *m
		pass.Workloads = append([]Workload(nil), m.Workloads...)
		for i := range pass.Workloads {
			w := &pass.Workloads[i]
			if w.Protected && !allow {
				w.Preemptible = false
			}
		}
		plan, err := SolveWith(&pass, opts, solver)
		if err != nil {
			return nil, nil, err
		}
		var pods []*corev1.Pod
		for _, id := range plan.Victims {
			if id == 0 || id > uint64(len(m.Workloads)) {
				return nil, nil, fmt.Errorf("the plan names unknown workload %d", id)
			}
			pods = append(pods, m.Workloads[id-1].Pods...)
		}
		return plan, pods, nil
	})
}

// cluster is one C-ABI cluster handle. The C ABI allows one thread at a time on a handle; the
// caller serialises (the mirror holds its mutex), and every call pins its goroutine to its OS
// thread for the duration, so a handle is never used by two threads at once.
type cluster struct{ cl *C.tp_cluster }

// newCluster defines and seals a cluster with these levels and domains (parents first).
func newCluster(levelNames []string, domains []Domain) (c *cluster, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("topopreempt: recovered at the C boundary: %v", r)
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cs cstrings
	defer cs.free()
	cl := C.tp_cluster_create()
	if cl == nil {
		return nil, fmt.Errorf("tp_cluster_create: out of memory")
	}
	c = &cluster{cl: cl}
	ok := false
	defer func() {
		if !ok {
			c.destroy()
		}
	}()
	levels := (*[64]*C.char)(cs.alloc(unsafe.Sizeof((*C.char)(nil)) * 64))
	if len(levelNames) > 64 {
		return nil, fmt.Errorf("%d topology levels (at most 64)", len(levelNames))
	}
	for i, l := range levelNames {
		levels[i] = cs.str(l)
	}
	// gpu_milli on the devices, then the node's pooled dimensions (PooledNames).
	resources := unsafe.Slice((*C.tp_resource)(cs.alloc(unsafe.Sizeof(C.tp_resource{})*(1+numPooled))), 1+numPooled)
	resources[0].name = cs.str("gpu_milli")
	resources[0].kind = C.TP_RESOURCE_DEVICE
	for d, name := range PooledNames {
		resources[1+d].name = cs.str(name)
		resources[1+d].kind = C.TP_RESOURCE_POOLED
	}
	res := &resources[0]
	var schema C.tp_schema
	C.tp_schema_init(&schema)
	schema.levels = (**C.char)(unsafe.Pointer(levels))
	schema.level_count = C.size_t(len(levelNames))
	schema.device_level = cs.str(levelDevice)
	schema.host_level = cs.str(levelNode)
	schema.resources = res
	schema.resource_count = C.size_t(len(resources))
	if err := check(cl, C.tp_cluster_define(cl, &schema), "define"); err != nil {
		return nil, err
	}
	gpu := (*C.tp_amount)(cs.alloc(unsafe.Sizeof(C.tp_amount{})))
	gpu.resource = res.name
	gpu.amount = 1000
	pooled := unsafe.Slice((*C.tp_amount)(cs.alloc(unsafe.Sizeof(C.tp_amount{})*numPooled)), numPooled)
	for _, d := range domains {
		var capacity *C.tp_amount
		n := C.size_t(0)
		if d.Level == levelDevice {
			capacity, n = gpu, 1
		} else if !d.Capacity.isZero() {
			n = C.size_t(pooledAmounts(pooled, d.Capacity, resources[1:]))
			capacity = &pooled[0]
		}
		p, l := C.CString(d.Path), C.CString(d.Level)
		st := C.tp_cluster_add_domain(cl, p, l, capacity, n)
		C.free(unsafe.Pointer(p))
		C.free(unsafe.Pointer(l))
		if err := check(cl, st, "domain "+d.Path); err != nil {
			return nil, err
		}
	}
	if err := check(cl, C.tp_cluster_seal(cl), "seal"); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// destroy frees the handle (idempotent).
func (c *cluster) destroy() {
	if c != nil && c.cl != nil {
		C.tp_cluster_destroy(c.cl)
		c.cl = nil
	}
}

// start records w (running, at its Entries).
func (c *cluster) start(w *Workload) error {
	_, err := atCBoundary(func() (struct{}, error) { return struct{}{}, startWorkload(c.cl, w) })
	return err
}

// finish forgets the running workload id.
func (c *cluster) finish(id uint64, name string) error {
	_, err := atCBoundary(func() (struct{}, error) {
		return struct{}{}, check(c.cl, C.tp_cluster_workload_finish(c.cl, C.uint64_t(id)), "finish "+name)
	})
	return err
}

// plan asks whom to preempt for the preemptor (read-only on the cluster), with the default solver.
func (c *cluster) plan(preemptor *Workload, opts *Args) (plan *Plan, err error) {
	return c.planWith(preemptor, opts, "")
}

// planWith is plan with a solver by name ("" the library's default).
func (c *cluster) planWith(preemptor *Workload, opts *Args, solver string) (*Plan, error) {
	return atCBoundary(func() (*Plan, error) {
		var cs cstrings
		defer cs.free()
		return plan1(c.cl, preemptor, opts, solver, &cs)
	})
}

// atCBoundary runs f on a handle's behalf: pinned to its OS thread (the C ABI allows one thread
// at a time on a handle), with a panic turned into an error, since nothing on this side of cgo
// may crash kube-scheduler.
func atCBoundary[T any](f func() (T, error)) (out T, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			out, err = zero, fmt.Errorf("topopreempt: recovered at the C boundary: %v", r)
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return f()
}

// pooledAmounts writes p's non-zero amounts into out (named as in the schema's pooled
// resources) and returns how many.
func pooledAmounts(out []C.tp_amount, p Pooled, names []C.tp_resource) int {
	k := 0
	for d, v := range p {
		if v != 0 {
			out[k].resource = names[d].name
			out[k].amount = C.int64_t(v)
			k++
		}
	}
	return k
}

// pooledC is p's non-zero amounts as a C array (strings and memory in cs).
func pooledC(p Pooled, cs *cstrings) (*C.tp_amount, C.size_t) {
	if p.isZero() {
		return nil, 0
	}
	out := unsafe.Slice((*C.tp_amount)(cs.alloc(unsafe.Sizeof(C.tp_amount{})*numPooled)), numPooled)
	k := 0
	for d, v := range p {
		if v != 0 {
			out[k].resource = cs.str(PooledNames[d])
			out[k].amount = C.int64_t(v)
			k++
		}
	}
	return &out[0], C.size_t(k)
}

// fillWorkload copies w into a tp_workload; strings go to cs.
func fillWorkload(cw *C.tp_workload, w *Workload, cs *cstrings) {
	C.tp_workload_init(cw)
	cw.id = C.uint64_t(w.ID)
	cw.name = cs.str(w.Name)
	cw.priority = C.int32_t(w.Priority)
	cw.preemptible = 0
	if w.Preemptible {
		cw.preemptible = 1
	}
	cw.replicas = C.int32_t(w.Replicas)
	cw.whole_devices = C.int32_t(w.WholeDevices)
	cw.demand, cw.demand_count = pooledC(w.Demand, cs)
	if w.ReplicaScope != "" {
		cw.replica_scope.mode = C.TP_SCOPE_GUARANTEED
		cw.replica_scope.level = cs.str(w.ReplicaScope)
	}
	if w.GangScope != "" {
		cw.gang_scope.mode = C.TP_SCOPE_GUARANTEED
		cw.gang_scope.level = cs.str(w.GangScope)
	}
	cw.start_time_s = C.double(w.StartTime)
	cw.seconds_since_checkpoint = C.double(w.SinceCkpt)
	if w.ModelID != "" {
		cw.model_id = cs.str(w.ModelID)
	}
	cw.model_size_gib = C.double(w.ModelGiB)
	cw.extra_cost = C.double(w.Extra)
}

func startWorkload(cl *C.tp_cluster, w *Workload) error {
	var cs cstrings
	defer cs.free()
	var cw C.tp_workload
	fillWorkload(&cw, w, &cs)
	n := len(w.Entries)
	entries := unsafe.Slice((*C.tp_placement_entry)(cs.alloc(unsafe.Sizeof(C.tp_placement_entry{})*uintptr(n))), n)
	for i, e := range w.Entries {
		entries[i].replica = C.uint32_t(e.Replica)
		entries[i].host = cs.str(e.Host)
		entries[i].path = cs.str(e.Path)
		entries[i].amounts, entries[i].amount_count = pooledC(e.Amounts, &cs)
	}
	var first *C.tp_placement_entry
	if n > 0 {
		first = &entries[0]
	}
	return check(cl, C.tp_cluster_workload_start(cl, &cw, first, C.size_t(n)), "workload "+w.Name)
}

var costModels = map[string]C.tp_cost_model{
	"priority_weighted": C.TP_COST_PRIORITY_WEIGHTED, "victim_count": C.TP_COST_VICTIM_COUNT,
	"kubernetes_order": C.TP_COST_KUBERNETES_ORDER, "lost_work": C.TP_COST_LOST_WORK,
	"reload_time": C.TP_COST_RELOAD_TIME, "extra": C.TP_COST_EXTRA,
}

var planStatus = map[C.int32_t]string{C.TP_PLAN_OPTIMAL: "optimal", C.TP_PLAN_FEASIBLE: "feasible",
	C.TP_PLAN_INFEASIBLE: "infeasible", C.TP_PLAN_NO_PREEMPTION_NEEDED: "no_preemption_needed",
	C.TP_PLAN_UNKNOWN: "unknown"}

// statusName is the plan status's name; a status this build does not know (a later C ABI may
// append one) is named by its number, and every caller falls back on a name it does not know.
func statusName(st C.int32_t) string {
	if name, ok := planStatus[st]; ok {
		return name
	}
	return fmt.Sprintf("status %d", int32(st))
}

// planOptions are the C ABI's plan options for the args and a solver by name ("" the
// library's default).
func planOptions(a *Args, solver string) (C.tp_plan_options, error) {
	var opts C.tp_plan_options
	C.tp_plan_options_init(&opts)
	if solver != "" {
		opts.solver = solverIDs[solver]
	}
	if a.TimeLimitSeconds > 0 {
		opts.time_limit_s = C.double(a.TimeLimitSeconds)
	}
	if len(a.Cost) > C.TP_MAX_COST_TERMS {
		return opts, fmt.Errorf("%d cost terms (at most %d)", len(a.Cost), C.TP_MAX_COST_TERMS)
	}
	for i, t := range a.Cost {
		model, ok := costModels[t.Model]
		if !ok {
			return opts, fmt.Errorf("cost term %d: unknown model %q", i, t.Model)
		}
		C.tp_cost_term_init(&opts.cost[i], model)
		if t.Weight != nil {
			opts.cost[i].weight = C.double(*t.Weight)
		}
		if t.Floor != nil {
			opts.cost[i].floor = C.double(*t.Floor)
		}
	}
	if len(a.Cost) > 0 {
		opts.cost_term_count = C.uint32_t(len(a.Cost))
	}
	return opts, nil
}

func plan1(cl *C.tp_cluster, preemptor *Workload, a *Args, solver string, cs *cstrings) (*Plan, error) {
	var pw C.tp_workload
	fillWorkload(&pw, preemptor, cs)
	opts, err := planOptions(a, solver)
	if err != nil {
		return nil, err
	}
	var p *C.tp_plan
	if err := check(cl, C.tp_cluster_plan(cl, &pw, &opts, &p), "plan for "+preemptor.Name); err != nil {
		return nil, err
	}
	defer C.tp_plan_destroy(p)
	return readPlan(p, preemptor.Replicas)
}

// readPlan copies a plan of a preemptor of `replicas` replicas into Go data.
func readPlan(p *C.tp_plan, replicas int32) (*Plan, error) {
	var info C.tp_plan_info
	C.tp_plan_info_init(&info)
	if st := C.tp_plan_get_info(p, &info); st != C.TP_OK {
		return nil, fmt.Errorf("plan info: %s", C.GoString(C.tp_status_name(st)))
	}
	out := &Plan{Status: statusName(info.status), Cost: float64(info.cost), Target: C.GoString(info.target),
		Explanation: C.GoString(info.explanation), Seconds: float64(info.seconds),
		Solver: C.GoString(info.solver), LowerBound: float64(info.lower_bound)}
	var victims *C.tp_victim
	var nv C.size_t
	if st := C.tp_plan_get_victims(p, &victims, &nv); st != C.TP_OK {
		return nil, fmt.Errorf("plan victims: %s", C.GoString(C.tp_status_name(st)))
	}
	for _, v := range unsafe.Slice(victims, int(nv)) {
		if v.action != C.TP_VICTIM_EVICT {
			return nil, fmt.Errorf("victim %d: a shrink, but pods are evicted whole", uint64(v.id))
		}
		out.Victims = append(out.Victims, uint64(v.id))
		out.VictimCosts = append(out.VictimCosts, float64(v.cost))
		out.VictimWhy = append(out.VictimWhy, C.GoString(v.reason))
	}
	var entries *C.tp_plan_entry
	var ne C.size_t
	if st := C.tp_plan_get_placement(p, &entries, &ne); st != C.TP_OK {
		return nil, fmt.Errorf("plan placement: %s", C.GoString(C.tp_status_name(st)))
	}
	out.Hosts = make([]string, replicas)
	for _, e := range unsafe.Slice(entries, int(ne)) {
		r := int(e.replica)
		if r < 0 || r >= len(out.Hosts) {
			return nil, fmt.Errorf("plan placement: replica %d out of range", r)
		}
		out.Hosts[r] = C.GoString(e.host)
		if e.is_device != 0 {
			out.Devices = append(out.Devices, Entry{Replica: uint32(r), Host: C.GoString(e.host), Path: C.GoString(e.host_path)})
		}
	}
	return out, nil
}

// QueuedPlan is what planning several preemptors together did for one of them.
type QueuedPlan struct {
	Preemptor uint64 // its workload id
	// Status is "kept" (its nomination from the last call still holds), "resumed" (kept
	// without the victims already gone), "planned", "replanned" (its nomination no longer
	// applied), "infeasible" or "rejected" (listed twice or already running: nothing planned).
	Status string
	Plan   *Plan    // made on the state the plans before it leave; nil when rejected
	Error  string   // why it was rejected
	Moved  []string // resumed or replanned: the domains its old nomination depended on that changed
}

var nominationStatus = map[C.int32_t]string{C.TP_NOMINATION_KEPT: "kept", C.TP_NOMINATION_RESUMED: "resumed",
	C.TP_NOMINATION_PLANNED: "planned", C.TP_NOMINATION_REPLANNED: "replanned",
	C.TP_NOMINATION_INFEASIBLE: "infeasible", C.TP_NOMINATION_REJECTED: "rejected",
	C.TP_NOMINATION_UNKNOWN: "unknown"}

// queue is one C-ABI queue handle: the nominations of the preemptors pending on one cluster,
// carried from one planQueue call to the next. Used with one cluster only, under its lock.
type queue struct{ q *C.tp_queue }

func newQueue() (*queue, error) {
	q := C.tp_queue_create()
	if q == nil {
		return nil, fmt.Errorf("tp_queue_create: out of memory")
	}
	return &queue{q: q}, nil
}

// destroy frees the handle (idempotent).
func (q *queue) destroy() {
	if q != nil && q.q != nil {
		C.tp_queue_destroy(q.q)
		q.q = nil
	}
}

// SolveQueue plans the preemptors together on the model's topology and running workloads
// (m.Preemptor is not one of them unless listed), as tp_cluster_plan_queue does: in priority
// order, each on the state the plans before it leave, so that no two count on the same room.
// Nothing is kept; the plugin keeps a queue beside its mirror (planQueue).
func SolveQueue(m *Model, preemptors []Workload, opts *Args) ([]QueuedPlan, error) {
	return withModelCluster(m, func(cl *cluster) ([]QueuedPlan, error) {
		q, err := newQueue()
		if err != nil {
			return nil, err
		}
		defer q.destroy()
		return cl.planQueue(q, preemptors, opts, "")
	})
}

// planQueue plans the preemptors together with q's nominations (see tp_cluster_plan_queue in
// topopreempt_c.h), with a solver by name ("" the library's default); read-only on the cluster.
func (c *cluster) planQueue(q *queue, preemptors []Workload, opts *Args, solver string) ([]QueuedPlan, error) {
	return atCBoundary(func() ([]QueuedPlan, error) {
		var cs cstrings
		defer cs.free()
		copts, err := planOptions(opts, solver)
		if err != nil {
			return nil, err
		}
		n := len(preemptors)
		// The structs and the array of pointers to them live in C memory: cgo forbids passing
		// Go memory that holds Go pointers.
		ws := unsafe.Slice((*C.tp_workload)(cs.alloc(unsafe.Sizeof(C.tp_workload{})*uintptr(n))), n)
		ptrs := unsafe.Slice((**C.tp_workload)(cs.alloc(unsafe.Sizeof((*C.tp_workload)(nil))*uintptr(n))), n)
		// An id listed twice is planned for its highest-priority entry (the first listed among
		// equals); the others are rejected. Its plan has that entry's replicas.
		planned := map[uint64]*Workload{}
		for i := range preemptors {
			p := &preemptors[i]
			fillWorkload(&ws[i], p, &cs)
			ptrs[i] = &ws[i]
			if prev, seen := planned[p.ID]; !seen || p.Priority > prev.Priority {
				planned[p.ID] = p
			}
		}
		var first **C.tp_workload
		if n > 0 {
			first = &ptrs[0]
		}
		if err := check(c.cl, C.tp_cluster_plan_queue(c.cl, q.q, first, C.size_t(n), &copts), "plan queue"); err != nil {
			return nil, err
		}
		var items *C.tp_queued_plan
		var count C.size_t
		if st := C.tp_queue_get_plans(q.q, &items, &count); st != C.TP_OK {
			return nil, fmt.Errorf("queue plans: %s", C.GoString(C.tp_status_name(st)))
		}
		out := make([]QueuedPlan, 0, int(count))
		for _, it := range unsafe.Slice(items, int(count)) {
			status, known := nominationStatus[it.status]
			if !known {
				return nil, fmt.Errorf("queue plan for %d: nomination status %d unknown to this plugin", uint64(it.preemptor), int32(it.status))
			}
			qp := QueuedPlan{Preemptor: uint64(it.preemptor), Status: status, Error: C.GoString(it.error)}
			for _, m := range unsafe.Slice(it.moved, int(it.moved_count)) {
				qp.Moved = append(qp.Moved, C.GoString(m))
			}
			if status != "rejected" {
				w, listed := planned[qp.Preemptor]
				if !listed {
					return nil, fmt.Errorf("queue plan for %d, which was not listed", qp.Preemptor)
				}
				plan, err := readPlan(it.plan, w.Replicas)
				if err != nil {
					return nil, fmt.Errorf("queue plan for %d: %w", qp.Preemptor, err)
				}
				qp.Plan = plan
			}
			out = append(out, qp)
		}
		return out, nil
	})
}
