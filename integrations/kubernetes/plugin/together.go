// SPDX-License-Identifier: MIT

package topopreempt

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"
)

// Preemptors pending together (docs/kubernetes.md, "Preemptors arriving together"). When the
// plugin plans a preemptor, the other preemptors pending beside it (pods of its scheduler,
// not bound, not nominated, not in flight, of a priority above some running pod's, with GPUs
// of its kind; a gang as its PodGroup's pending pods) are planned with it in one
// tp_cluster_plan_queue call, in the scheduler's order: priority, then creation time. The
// queue plans them one by one, each on the state the plans before it leave, so no room is
// counted twice. Only the preemptor in hand is acted on; the queue's answer for the others is
// thrown away (each is planned again, with the rooms then nominated reserved, when its turn
// comes).
//
// The preemptors after the one in hand cannot change its plan: the queue plans it before them.
// Those before it can: it leaves them the rooms they would take. Towards a preemptor of higher
// priority that is always right (the scheduler lets it take a lower one's nominated room, so
// evicting there would be wasted). Towards one of equal priority created earlier it is a
// choice, so the plugin makes it by the joint cost: it plans the same preemptors a second time
// with itself first among its equals, and defers (takes its plan from the scheduler's order)
// only when that order places more preemptors, or as many at a lower total cost. Otherwise it
// keeps the plan it has alone. It never takes a queued plan that evicts nobody, that is
// infeasible while its own plan is not, or that violates more PodDisruptionBudgets than its
// own: the queue never leaves it worse off than planning alone where nothing is gained.
//
// The model holds one eligibility per question (the in-hand preemptor's blockers), so another
// preemptor is planned with it only when the filters that read its spec refuse it exactly the
// nodes the in-hand one may not use; the others are left out (counted in the log).

// maxTogether bounds the preemptors planned with the one in hand (the first in the scheduler's
// order): every one costs a cold solve per queue call.
const maxTogether = 32

// PendingPreemptor is another preemptor pending beside the one in hand: one pod, or the
// pending pods of a PodGroup.
type PendingPreemptor struct {
	Pods    []*corev1.Pod
	Group   *schedulingv1beta1.PodGroup
	Created time.Time // the pod's or the PodGroup's creation time
}

func (p *PendingPreemptor) uid() types.UID {
	if p.Group != nil {
		return p.Group.UID
	}
	return p.Pods[0].UID
}

func (p *PendingPreemptor) priority() int32 { return podPriority(p.Pods[0]) }

// orderKey is where a preemptor stands in the scheduler's order: priority descending, then
// creation time. The API keeps creation times to the second, and preemptors created together
// share one, while the scheduler's queue orders them by when it received them, which the
// plugin does not see; among those the larger request (GPUs in all) goes first, as in
// first-fit decreasing, so that the queue does not let small requests fragment the rooms a
// gang needs; then the uid.
type orderKey struct {
	priority int32
	created  time.Time
	gpus     int64
	uid      types.UID
}

func (a orderKey) before(b orderKey) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if !a.created.Equal(b.created) {
		return a.created.Before(b.created)
	}
	if a.gpus != b.gpus {
		return a.gpus > b.gpus
	}
	return a.uid < b.uid
}

// key is the preemptor's place in the scheduler's order (GPUs unknown yet: 0).
func (p *PendingPreemptor) key() orderKey {
	return orderKey{priority: p.priority(), created: p.Created, uid: p.uid()}
}

// keyOf is a queue entry's place in the scheduler's order.
func keyOf(w *Workload, created time.Time, uid types.UID) orderKey {
	return orderKey{priority: w.Priority, created: created, gpus: int64(w.Replicas) * int64(w.WholeDevices), uid: uid}
}

// PendingPreemptors are the preemptors pending beside the one in hand (pods, group), from
// every pod the scheduler's informer lists (all), in the scheduler's order (GPUs not yet
// counted), at most maxTogether. inFlight are the UIDs (pod or PodGroup) of preemptors whose evictions run.
func PendingPreemptors(args *Args, in *Inputs, all []*corev1.Pod, pods []*corev1.Pod, group *schedulingv1beta1.PodGroup, inFlight map[types.UID]bool) []PendingPreemptor {
	self := selfUIDs(pods, group)
	// Nominated, or in the snapshot already: a pod assumed on a node while it is being bound
	// is still unbound in the informer's copy. Read once an unbound pod needs it (usually
	// none: every pod but the preemptor is bound).
	var placed map[types.UID]bool
	lowest, running := int32(0), false
	readSnapshot := func() {
		if placed != nil {
			return
		}
		placed = map[types.UID]bool{}
		for _, n := range in.Nominated {
			placed[n.Pod.UID] = true
		}
		for _, ps := range in.Pods {
			for _, p := range ps {
				placed[p.UID] = true
				if p.DeletionTimestamp == nil && (!running || podPriority(p) < lowest) {
					lowest, running = podPriority(p), true
				}
			}
		}
	}
	ext := wantsExtended(args, pods[0])
	scheduler := pods[0].Spec.SchedulerName
	var out []PendingPreemptor
	groups := map[string]*PendingPreemptor{}
	spoilt := map[string]bool{} // PodGroups with a member bound, nominated or not a preemptor
	for _, p := range all {
		gk := ""
		if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
			gk = p.Namespace + "/" + *sg.PodGroupName
		}
		if p.Spec.SchedulerName != scheduler || self[p.UID] || (group != nil && sameGroup(p, pods[0])) {
			continue
		}
		waiting := p.Spec.NodeName == "" && p.DeletionTimestamp == nil && p.Status.NominatedNodeName == ""
		if waiting {
			readSnapshot()
			waiting = !placed[p.UID] && !inFlight[p.UID] && (p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != corev1.PreemptNever) &&
				running && podPriority(p) > lowest && wantsExtended(args, p) == ext
		}
		if gk == "" {
			if waiting {
				out = append(out, PendingPreemptor{Pods: []*corev1.Pod{p}, Created: p.CreationTimestamp.Time})
			}
			continue
		}
		if !waiting {
			spoilt[gk] = true
			continue
		}
		g := groups[gk]
		if g == nil {
			pg := in.PodGroup
			var obj *schedulingv1beta1.PodGroup
			if pg != nil {
				obj = pg(p.Namespace, *p.Spec.SchedulingGroup.PodGroupName)
			}
			if obj == nil || inFlight[obj.UID] {
				spoilt[gk] = true
				continue
			}
			g = &PendingPreemptor{Group: obj, Created: obj.CreationTimestamp.Time}
			groups[gk] = g
		}
		g.Pods = append(g.Pods, p)
	}
	for gk, g := range groups {
		if spoilt[gk] || len(g.Pods) == 0 {
			continue
		}
		sort.Slice(g.Pods, func(i, j int) bool { return g.Pods[i].Name < g.Pods[j].Name })
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		return a.key().before(b.key())
	})
	if len(out) > maxTogether {
		out = out[:maxTogether]
	}
	return out
}

// Together is what planning with the other pending preemptors did, for the log.
type Together struct {
	Queued  int    // other preemptors planned with this one
	LeftOut int    // others not planned with it (eligibility differs, or inexpressible)
	Choice  string // "alone" (its own plan kept), "deferred" (its plan from the scheduler's order)
	Why     string // the reason for the choice, with the joint costs compared
}

func (t Together) String() string {
	if t.Queued == 0 {
		return fmt.Sprintf("alone (%d other preemptor(s) left out)", t.LeftOut)
	}
	return fmt.Sprintf("%s with %d other preemptor(s) (%d left out): %s", t.Choice, t.Queued, t.LeftOut, t.Why)
}

// queueEntry is one preemptor of a queue call.
type queueEntry struct {
	w       Workload
	created time.Time
	uid     types.UID
	self    bool
}

// queueOutcome is one queue call's answer: the in-hand preemptor's plan and the totals.
type queueOutcome struct {
	self   *QueuedPlan
	placed int
	cost   float64
}

// placedPlan says whether a queued plan gives its preemptor a placement.
func placedPlan(q *QueuedPlan) bool {
	if q.Plan == nil {
		return false
	}
	switch q.Plan.Status {
	case "optimal", "feasible", "no_preemption_needed":
		return true
	}
	return false
}

// runQueue plans the entries in one queue call, ordered as the scheduler does (selfFirst: the
// in-hand preemptor first among its equals in priority), with fresh ids in that order (the
// queue breaks ties in priority by id).
func (m *mirror) runQueue(entries []queueEntry, args *Args, selfFirst bool) (*queueOutcome, error) {
	order := append([]queueEntry(nil), entries...)
	sort.SliceStable(order, func(i, j int) bool {
		a, b := &order[i], &order[j]
		if selfFirst && a.w.Priority == b.w.Priority && a.self != b.self {
			return a.self
		}
		return keyOf(&a.w, a.created, a.uid).before(keyOf(&b.w, b.created, b.uid))
	})
	ws := make([]Workload, len(order))
	selfID := uint64(0)
	for i := range order {
		ws[i] = order[i].w
		m.nextID++
		ws[i].ID = m.nextID
		if order[i].self {
			selfID = ws[i].ID
		}
	}
	q, err := newQueue()
	if err != nil {
		return nil, err
	}
	defer q.destroy()
	plans, err := m.cl.planQueue(q, ws, args, "")
	if err != nil {
		return nil, err
	}
	out := &queueOutcome{}
	for i := range plans {
		p := &plans[i]
		if p.Preemptor == selfID {
			out.self = p
		}
		if placedPlan(p) {
			out.placed++
			out.cost += p.Plan.Cost
		}
	}
	if out.self == nil {
		return nil, fmt.Errorf("the queue did not answer for the preemptor")
	}
	return out, nil
}

// samePlan says whether two plans evict the same workloads for the same hosts.
func samePlan(a, b *Plan) bool {
	if len(a.Victims) != len(b.Victims) || len(a.Hosts) != len(b.Hosts) {
		return false
	}
	for i := range a.Victims {
		if a.Victims[i] != b.Victims[i] {
			return false
		}
	}
	for i := range a.Hosts {
		if a.Hosts[i] != b.Hosts[i] {
			return false
		}
	}
	return true
}

// together plans the preemptor pre (its own plan alone: solo, with soloViolations PDB
// violations) with the other pending preemptors on the mirror as the question left it
// (blockers, reservations, protection), and returns the plan to act on (solo, or its plan in
// the scheduler's order: see the comment at the top). own is the preemptor's ineligible nodes
// by its spec and the scheduler's verdicts (before reservations).
func (m *mirror) together(args *Args, in *Inputs, pre *Workload, pods []*corev1.Pod, group *schedulingv1beta1.PodGroup,
	solo *Plan, soloViolations int, own map[string]string, others []PendingPreemptor) (*Plan, Together, error) {
	t := Together{Choice: "alone"}
	if len(others) == 0 {
		return solo, t, nil
	}
	created := pods[0].CreationTimestamp.Time
	uid := pods[0].UID
	if group != nil {
		created, uid = group.CreationTimestamp.Time, group.UID
	}
	entries := []queueEntry{{w: *pre, created: created, uid: uid, self: true}}
	spec := *in
	spec.Refused = nil // another preemptor's eligibility: its spec's filters only
	ahead := false     // an equal-priority preemptor comes before this one
	higher := false    // a preemptor of higher priority is pending
	for i := range others {
		o := &others[i]
		b := m.builder(args, &spec)
		if err := b.preemptor(o.Pods, o.Group); err != nil {
			t.LeftOut++
			continue
		}
		if !sameKeys(b.ineligible(o.Pods), own) {
			t.LeftOut++
			continue
		}
		w := b.m.Preemptor
		w.Key = "queued/" + string(o.uid())
		entries = append(entries, queueEntry{w: w, created: o.Created, uid: o.uid()})
		higher = higher || w.Priority > pre.Priority
		if w.Priority == pre.Priority && keyOf(&w, o.Created, o.uid()).before(keyOf(pre, created, uid)) {
			ahead = true
		}
	}
	t.Queued = len(entries) - 1
	if t.Queued == 0 {
		return solo, t, nil
	}
	if !ahead && !higher {
		// First in the order: the queue would plan it first, on its own question's state.
		t.Why = "no pending preemptor comes before it"
		return solo, t, nil
	}
	order, err := m.runQueue(entries, args, false)
	if err != nil {
		return nil, t, err
	}
	mine := order.self.Plan
	switch {
	case mine == nil || samePlan(mine, solo):
		t.Why = "its plan in the scheduler's order is its own"
		return solo, t, nil
	case mine.Status != "optimal" && mine.Status != "feasible":
		t.Why = "in the scheduler's order it is " + order.self.Status + " (" + mine.Status + ")"
		return solo, t, nil
	case PDBViolations(in.PDBs, m.victimPods(mine)) > soloViolations:
		t.Why = "its plan in the scheduler's order violates more PodDisruptionBudgets"
		return solo, t, nil
	}
	if !ahead { // only preemptors of higher priority come before it: they take their rooms
		t.Choice, t.Why = "deferred", fmt.Sprintf("preemptors of higher priority come first (joint cost %g)", order.cost)
		return mine, t, nil
	}
	first, err := m.runQueue(entries, args, true)
	if err != nil {
		return nil, t, err
	}
	if order.placed > first.placed || (order.placed == first.placed && order.cost < first.cost) {
		t.Choice = "deferred"
		t.Why = fmt.Sprintf("the scheduler's order places %d at joint cost %g, itself first %d at %g", order.placed, order.cost, first.placed, first.cost)
		return mine, t, nil
	}
	t.Why = fmt.Sprintf("itself first places %d at joint cost %g, the scheduler's order %d at %g", first.placed, first.cost, order.placed, order.cost)
	if p := first.self.Plan; higher && p != nil && (p.Status == "optimal" || p.Status == "feasible") && !samePlan(p, solo) &&
		PDBViolations(in.PDBs, m.victimPods(p)) <= soloViolations {
		return p, t, nil // after the preemptors of higher priority
	}
	return solo, t, nil
}

// workloadsOf are the running workloads the plan evicts.
func (m *mirror) workloadsOf(p *Plan) ([]*Workload, error) {
	out := make([]*Workload, 0, len(p.Victims))
	for _, id := range p.Victims {
		w, ok := m.byID[id]
		if !ok {
			return nil, fmt.Errorf("topopreempt: the plan names unknown workload %d", id)
		}
		out = append(out, w)
	}
	return out, nil
}

// victimPods are the pods of the plan's victims (unknown ids are skipped: workloadsOf, which
// the plan goes through before it is acted on, refuses them).
func (m *mirror) victimPods(p *Plan) []*corev1.Pod {
	var out []*corev1.Pod
	for _, id := range p.Victims {
		if w, ok := m.byID[id]; ok {
			out = append(out, w.Pods...)
		}
	}
	return out
}

// sameKeys says whether two maps have the same keys.
func sameKeys(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}
