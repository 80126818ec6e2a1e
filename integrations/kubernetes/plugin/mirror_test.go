// SPDX-License-Identifier: MIT

package topopreempt

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// versioned gives every slice a resourceVersion, as objects from an API server have: the
// mirror then keeps its topology across syncs.
func versioned(s *tState) {
	for _, sl := range s.in.Slices {
		sl.ResourceVersion = "1"
	}
}

// fresh solves the same question the one-off way (a new C cluster from the whole state).
func fresh(t *testing.T, s *tState, pre *corev1.Pod) *Plan {
	t.Helper()
	m, err := BuildModel(tArgs(), &s.in, []*corev1.Pod{pre}, nil)
	if err != nil {
		t.Fatalf("BuildModel: %v", err)
	}
	p, err := Solve(m, tArgs())
	if err != nil {
		t.Fatalf("Solve: %v", err)
	}
	return p
}

func podNames(d *decision) string {
	var names []string
	for _, w := range d.victims {
		for _, p := range w.Pods {
			names = append(names, p.Name)
		}
	}
	return strings.Join(names, ",")
}

// The mirror answers what a fresh cluster answers, on the first question and after changes
// (a victim gone, a pod moved, a pod added), applying only the changes: no rebuild, and one
// finish/start per changed pod.
func TestMirrorFollowsChangesIncrementally(t *testing.T) {
	s, pre := scaleState(40)
	versioned(s)
	args := tArgs()
	m := newMirror(false)
	defer m.close()
	d, err := m.decide(args, &s.in, []*corev1.Pod{pre}, nil)
	if err != nil {
		t.Fatalf("decide: %v", err)
	}
	want := fresh(t, s, pre)
	if d.plan.Cost != want.Cost || d.plan.Status != want.Status || fmt.Sprint(d.plan.Victims) != fmt.Sprint(want.Victims) {
		t.Fatalf("mirror plan %+v, fresh plan %+v", d.plan, want)
	}
	if m.rebuilds != 1 || m.starts != 400 || m.finishes != 0 {
		t.Fatalf("first sync: %d rebuilds, %d starts, %d finishes; want 1, 400 (every pod, with or without GPUs), 0", m.rebuilds, m.starts, m.finishes)
	}
	victims := podNames(d)

	// The victims leave (as after the eviction); one pod's cost changes; a pod starts on the
	// freed GPUs of another node... all in one step.
	gone := map[string]bool{}
	for _, w := range d.victims {
		for _, p := range w.Pods {
			gone[p.Name] = true
		}
	}
	for node, pods := range s.in.Pods {
		kept := pods[:0]
		for _, p := range pods {
			if !gone[p.Name] {
				kept = append(kept, p)
			}
		}
		s.in.Pods[node] = kept
	}
	s.in.Pods["kwok-0001"][0].Annotations[CostAnnotation] = "19"
	starts, finishes := m.starts, m.finishes
	d2, err := m.decide(args, &s.in, []*corev1.Pod{pre}, nil)
	if err != nil {
		t.Fatalf("decide after changes: %v", err)
	}
	if m.rebuilds != 1 || m.starts-starts != 1 || m.finishes-finishes != uint64(len(gone))+1 {
		t.Fatalf("second sync: %d rebuilds, %d starts, %d finishes; want 1, 1 (the re-priced pod), %d",
			m.rebuilds, m.starts-starts, m.finishes-finishes, len(gone)+1)
	}
	want2 := fresh(t, s, pre)
	if d2.plan.Status != "no_preemption_needed" || want2.Status != d2.plan.Status {
		t.Fatalf("after the victims left: mirror %+v, fresh %+v; want no_preemption_needed (victims were %s)", d2.plan, want2, victims)
	}

	// A node more: the topology changed, so the mirror is rebuilt and still agrees.
	s.node("kwok-9999", "rack-999")
	versioned(s)
	s.run("late", "kwok-9999", 100, "1", 0, 1, 2, 3, 4, 5, 6, 7)
	d3, err := m.decide(args, &s.in, []*corev1.Pod{pre}, nil)
	if err != nil {
		t.Fatalf("decide after a new node: %v", err)
	}
	if m.rebuilds != 2 {
		t.Fatalf("%d rebuilds after a new node, want 2", m.rebuilds)
	}
	if want3 := fresh(t, s, pre); d3.plan.Status != want3.Status || d3.plan.Cost != want3.Cost {
		t.Fatalf("after a new node: mirror %+v, fresh %+v", d3.plan, want3)
	}
}

// A view the C side refuses (two pods holding one GPU) is an error, and the mirror starts
// over: once the view is sound again, it answers as a fresh cluster does.
func TestMirrorRecoversFromARefusedView(t *testing.T) {
	s := newTState()
	s.node("a", "r0")
	versioned(s)
	s.run("a0", "a", 100, "5", 0)
	s.run("a1", "a", 100, "7", 1, 2, 3)
	s.run("a4", "a", 100, "50", 4, 5, 6, 7)
	s.claim("want", 4, NUMAAttribute)
	pre := tPod("preemptor", 500, "want", nil)
	m := newMirror(false)
	defer m.close()
	if _, err := m.decide(tArgs(), &s.in, []*corev1.Pod{pre}, nil); err != nil {
		t.Fatalf("decide: %v", err)
	}
	twice := s.run("twice", "a", 100, "1", 0)
	if _, err := m.decide(tArgs(), &s.in, []*corev1.Pod{pre}, nil); err == nil {
		t.Fatalf("a GPU held twice was accepted")
	}
	if m.cl != nil {
		t.Fatalf("the mirror kept its cluster after a refused start")
	}
	s.in.Pods["a"] = s.in.Pods["a"][:3]
	_ = twice
	d, err := m.decide(tArgs(), &s.in, []*corev1.Pod{pre}, nil)
	if err != nil {
		t.Fatalf("decide after recovery: %v", err)
	}
	if want := fresh(t, s, pre); d.plan.Cost != want.Cost || d.plan.Cost != 12 || podNames(d) != "a0,a1" {
		t.Fatalf("after recovery: mirror %+v (victims %s), fresh %+v; want cost 12, a0,a1", d.plan, podNames(d), want)
	}
}

// warmScaleMirror is the benchmarks' setup: a 1,000-node state of API objects and a mirror
// that has answered its preemptor once (built and synced), so the loop measures warm questions.
func warmScaleMirror(b *testing.B) (*tState, *corev1.Pod, *mirror) {
	b.Helper()
	s, pre := scaleState(1000)
	fromAPI(s)
	m := newMirror(false)
	if _, err := m.decide(tArgs(), &s.in, []*corev1.Pod{pre}, nil); err != nil {
		m.close()
		b.Fatal(err)
	}
	return s, pre, m
}

// Repeated questions on an unchanged 1,000-node state of API objects (versions and
// generations): what PostFilter pays once warm.
func BenchmarkMirrorDecide1000(b *testing.B) {
	s, pre, m := warmScaleMirror(b)
	defer m.close()
	for b.Loop() {
		if _, err := m.decide(tArgs(), &s.in, []*corev1.Pod{pre}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// A new preemptor each time on a warm mirror: the decider starts cold, the state does not.
func BenchmarkMirrorNewPreemptor1000(b *testing.B) {
	s, _, m := warmScaleMirror(b)
	defer m.close()
	i := 0
	for b.Loop() {
		i++
		p := tPod(fmt.Sprintf("pre%d", i), 500, "pre-gpus", nil)
		if _, err := m.decide(tArgs(), &s.in, []*corev1.Pod{p}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// fromAPI gives every object a resourceVersion, as objects from an API server have: the
// mirror then derives again only what changed.
func fromAPI(s *tState) {
	versioned(s)
	for _, pods := range s.in.Pods {
		for _, p := range pods {
			p.ResourceVersion = "1"
		}
	}
	for _, c := range s.in.Claims {
		c.ResourceVersion = "1"
	}
}

// holdsFresh asks the mirror the question (a sync) and fails unless its C cluster then holds
// exactly the workloads a fresh model of the state has (by key, field by field) and answers
// as a fresh cluster does.
func holdsFresh(t *testing.T, m *mirror, s *tState, pre *corev1.Pod) {
	t.Helper()
	d, err := m.decide(tArgs(), &s.in, []*corev1.Pod{pre}, nil)
	if err != nil {
		t.Fatalf("decide: %v", err)
	}
	model, err := BuildModel(tArgs(), &s.in, []*corev1.Pod{pre}, nil)
	if err != nil {
		t.Fatalf("BuildModel: %v", err)
	}
	if len(model.Workloads) != len(m.running) {
		t.Fatalf("the mirror holds %d workloads, a fresh model %d", len(m.running), len(model.Workloads))
	}
	for i := range model.Workloads {
		w := &model.Workloads[i]
		if cur, ok := m.running[w.Key]; !ok || !sameWorkload(cur, w) {
			t.Fatalf("workload %s: the mirror holds %s, a fresh model %s", w.Key, brief(cur), brief(w))
		}
	}
	if want := fresh(t, s, pre); d.plan.Status != want.Status || d.plan.Cost != want.Cost {
		t.Fatalf("mirror plan %+v, fresh plan %+v", d.plan, want)
	}
}

// brief shows what the C cluster holds of a workload (not its API objects).
func brief(w *Workload) string {
	if w == nil {
		return "nothing"
	}
	c := *w
	c.Pods, c.Claims = nil, nil
	return fmt.Sprintf("%+v", c)
}

// replace puts a copy of node's pod `name`, changed by `change`, in its place (an API object
// is never changed in place).
func replace(s *tState, node, name string, change func(*corev1.Pod)) {
	for i, p := range s.in.Pods[node] {
		if p.Name == name {
			q := p.DeepCopy()
			change(q)
			s.in.Pods[node][i] = q
			return
		}
	}
	panic("no pod " + name)
}

// A sync derives again exactly the nodes that changed: none when nothing did; the node where a
// pod was replaced; the node where a pod changed version; the node where a claim's allocation
// changed (the pod and its NodeInfo unchanged). After each, the mirror holds what a fresh
// model holds.
func TestMirrorDerivesOnlyChangedNodes(t *testing.T) {
	s, pre := scaleState(40)
	fromAPI(s)
	m := newMirror(false)
	defer m.close()
	if _, err := m.decide(tArgs(), &s.in, []*corev1.Pod{pre}, nil); err != nil {
		t.Fatalf("decide: %v", err)
	}
	if m.derived != 40 {
		t.Fatalf("first sync derived %d nodes, want 40", m.derived)
	}
	step := func(what string, derived, starts, finishes uint64) {
		t.Helper()
		d0, s0, f0 := m.derived, m.starts, m.finishes
		holdsFresh(t, m, s, pre)
		if m.derived-d0 != derived || m.starts-s0 != starts || m.finishes-f0 != finishes || m.rebuilds != 1 {
			t.Fatalf("%s: derived %d nodes, %d starts, %d finishes, %d rebuilds; want %d, %d, %d, 1",
				what, m.derived-d0, m.starts-s0, m.finishes-f0, m.rebuilds, derived, starts, finishes)
		}
	}
	step("unchanged", 0, 0, 0)

	// The same pods in another order (the informers list them otherwise than the snapshot).
	pods := s.in.Pods["kwok-0002"]
	for i, j := 0, len(pods)-1; i < j; i, j = i+1, j-1 {
		pods[i], pods[j] = pods[j], pods[i]
	}
	step("the same pods in another order", 0, 0, 0)

	// A pod replaced by another on the same GPUs.
	replace(s, "kwok-0003", "kwok-0003-p0", func(p *corev1.Pod) {
		p.Name, p.UID, p.ResourceVersion = "kwok-0003-new", "uid-kwok-0003-new", "7"
		p.Annotations = map[string]string{CostAnnotation: "3"}
	})
	step("a pod replaced", 1, 1, 1)

	// A pod re-priced.
	replace(s, "kwok-0009", "kwok-0009-p4", func(p *corev1.Pod) {
		p.ResourceVersion = "2"
		p.Annotations = map[string]string{CostAnnotation: "0.5"}
	})
	step("a pod changed at the same generation", 1, 1, 1)

	// A claim's allocation changed (the pod now holds one GPU of its two), nothing else.
	for i, c := range s.in.Claims {
		if c.Name == "kwok-0007-p2-gpus" {
			c = c.DeepCopy()
			c.ResourceVersion = "2"
			c.Status.Allocation.Devices.Results = c.Status.Allocation.Devices.Results[:1]
			s.in.Claims[i] = c
		}
	}
	step("a claim changed", 1, 1, 1)

	// A node's pods gone: its ten workloads (six with GPUs, four CPU-only) finish (nothing
	// left to derive).
	delete(s.in.Pods, "kwok-0011")
	step("a node's pods gone", 0, 0, 10)
}

// A disruptionMode=All PodGroup spanning nodes is one workload: a change on one of its nodes
// regroups it with its members elsewhere, and a change of the PodGroup object alone regroups
// its members on unchanged nodes.
func TestMirrorRegroupsPodGroupsAcrossNodes(t *testing.T) {
	s := newTState()
	for _, n := range []string{"a", "b", "c"} {
		s.node(n, "r0")
	}
	all := true
	version := "1"
	s.in.PodGroup = func(ns, name string) *schedulingv1beta1.PodGroup {
		if name != "g" {
			return nil
		}
		g := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "uid-g", ResourceVersion: version}}
		if all {
			g.Spec.DisruptionMode = &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}}
		}
		return g
	}
	for _, n := range []string{"a", "b"} {
		p := s.run("g-"+n, n, 100, "10", 0, 1, 2, 3, 4, 5, 6, 7)
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("g")}
	}
	s.run("c0", "c", 100, "1", 0, 1, 2, 3)
	s.run("c4", "c", 100, "2", 4, 5, 6, 7)
	s.claim("pre-gpus", 8, "")
	pre := tPod("pre", 500, "pre-gpus", nil)
	fromAPI(s)
	m := newMirror(false)
	defer m.close()
	holdsFresh(t, m, s, pre)
	if gang := m.running["podgroup/ns/g"]; gang == nil || gang.Replicas != 2 || gang.Extra != 20 {
		t.Fatalf("the PodGroup's workload is %+v, want 2 replicas costing 20", gang)
	}
	step := func(what string, derived, starts, finishes uint64) {
		t.Helper()
		d0, s0, f0 := m.derived, m.starts, m.finishes
		holdsFresh(t, m, s, pre)
		if m.derived-d0 != derived || m.starts-s0 != starts || m.finishes-f0 != finishes {
			t.Fatalf("%s: derived %d nodes, %d starts, %d finishes; want %d, %d, %d",
				what, m.derived-d0, m.starts-s0, m.finishes-f0, derived, starts, finishes)
		}
	}
	replace(s, "b", "g-b", func(p *corev1.Pod) {
		p.ResourceVersion = "2"
		p.Annotations = map[string]string{CostAnnotation: "30"}
	})
	step("a member re-priced on one node", 1, 1, 1)
	if gang := m.running["podgroup/ns/g"]; gang == nil || gang.Extra != 40 {
		t.Fatalf("the PodGroup's workload is %+v, want cost 40", gang)
	}
	all, version = false, "2"
	step("the PodGroup no longer disrupted whole", 0, 2, 1)
	all, version = true, "3"
	step("the PodGroup disrupted whole again", 0, 1, 2)
}

// Each question after one node's pod changed (as after a bind): the sync derives that node.
func BenchmarkMirrorOneNodeChanged1000(b *testing.B) {
	s, pre, m := warmScaleMirror(b)
	defer m.close()
	i := 0
	for b.Loop() {
		i++
		node := fmt.Sprintf("kwok-%04d", i%1000)
		replace(s, node, node+"-p0", func(p *corev1.Pod) { p.ResourceVersion = fmt.Sprint(i + 1) })
		if _, err := m.decide(tArgs(), &s.in, []*corev1.Pod{pre}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// devicesOf lists the device paths workload `key` holds in the model, in order.
func devicesOf(m *Model, key string) string {
	var paths []string
	for _, w := range m.Workloads {
		if w.Key != key {
			continue
		}
		for _, e := range w.Entries {
			if e.Path != "" {
				paths = append(paths, e.Path)
			}
		}
	}
	return strings.Join(paths, ",")
}

// workloadOf is the model's workload with that key (nil: none).
func workloadOf(m *Model, key string) *Workload {
	for i := range m.Workloads {
		if m.Workloads[i].Key == key {
			return &m.Workloads[i]
		}
	}
	return nil
}

// bindAwaiting binds a pod of priority 1000 to node whose claim (count GPUs, match a
// matchAttribute or "") is not allocated yet, as the scheduler's snapshot shows it while the
// allocation is being written.
func bindAwaiting(s *tState, name, node string, count int64, match string) (*corev1.Pod, *resourcev1.ResourceClaim) {
	c := s.claim(name+"-gpus", count, match)
	c.UID = types.UID("uid-" + c.Name)
	p := tPod(name, 1000, c.Name, map[string]string{CostAnnotation: "1"})
	p.Spec.NodeName = node
	s.in.Pods[node] = append(s.in.Pods[node], p)
	return p, c
}

// awaitingState: node a's NUMA 0 is one low pod of cost 1, its NUMA 1 free; node b's NUMA 0
// is four low pods of cost 10, its NUMA 1 held high. The preemptor asks for 4 GPUs on one
// NUMA node.
func awaitingState() (*tState, *corev1.Pod) {
	s := newTState()
	s.node("a", "r0")
	s.node("b", "r0")
	s.run("a-cheap", "a", 100, "1", 0, 1, 2, 3)
	for i := 0; i < 4; i++ {
		s.run(fmt.Sprintf("b%d", i), "b", 100, "10", i)
	}
	s.run("b-high", "b", 1000, "1", 4, 5, 6, 7)
	s.claim("want", 4, NUMAAttribute)
	return s, tPod("preemptor", 500, "want", nil)
}

// A bound pod whose claim is not allocated yet holds what it will hold: with nothing known of
// the allocation, every device it may be given (a's NUMA 1, all free), so the preemptor is not
// planned there; the question stays expressible and a stays eligible (its cheap pod is the
// victim). Once the claim is allocated a moment later, the mirror derives a again and the pod
// holds exactly its two devices, leaving the other two of NUMA 1 free again. Fresh model and
// mirror hold the same workloads at each step.
func TestAwaitingClaimHoldsWhatItMayBeGiven(t *testing.T) {
	s, pre := awaitingState()
	p, c := bindAwaiting(s, "binding", "a", 2, "")
	fromAPI(s)
	m := newMirror(false)
	defer m.close()
	holdsFresh(t, m, s, pre)
	model, plan := solveFor(t, s, tArgs(), []*corev1.Pod{pre}, nil)
	key := "pod/" + string(p.UID)
	if got := devicesOf(model, key); got != "numa1/pci2/gpu4,numa1/pci2/gpu5,numa1/pci3/gpu6,numa1/pci3/gpu7" {
		t.Fatalf("the awaiting pod holds %q, want all of a's free NUMA 1", got)
	}
	if w := workloadOf(model, key); w == nil || !w.Preemptible || w.WholeDevices != 4 {
		t.Fatalf("the awaiting pod's workload is %+v, want a preemptible holder of 4 devices", w)
	}
	if len(model.Ineligible) != 0 || plan.Hosts[0] != "a" || strings.Join(victimNames(t, model, plan), ",") != "a-cheap" {
		t.Fatalf("ineligible %v, plan on %v victims %v; want a eligible and a-cheap evicted", model.Ineligible, plan.Hosts, victimNames(t, model, plan))
	}

	// The allocation is written a moment later: gpu4 and gpu5.
	for i, cl := range s.in.Claims {
		if cl.Name == c.Name {
			cl = cl.DeepCopy()
			cl.ResourceVersion = "2"
			cl.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
				{Request: "gpus", Driver: tDriver, Pool: "a", Device: "gpu4"}, {Request: "gpus", Driver: tDriver, Pool: "a", Device: "gpu5"}}}}
			s.in.Claims[i] = cl
		}
	}
	d0 := m.derived
	holdsFresh(t, m, s, pre)
	if m.derived-d0 != 1 || m.rebuilds != 1 {
		t.Fatalf("after the allocation: %d nodes derived, %d rebuilds; want 1 (a), 1", m.derived-d0, m.rebuilds)
	}
	if got := devicesOf(must(BuildModel(tArgs(), &s.in, []*corev1.Pod{pre}, nil)), key); got != "numa1/pci2/gpu4,numa1/pci2/gpu5" {
		t.Fatalf("after the allocation the pod holds %q, want gpu4,gpu5", got)
	}
}

// must is the model or the test's panic.
func must(m *Model, err error) *Model {
	if err != nil {
		panic(err)
	}
	return m
}

// A claim that must lie in one NUMA node can be given only devices of a NUMA node with enough
// free: the awaiting pod holds those, and a free device elsewhere stays free. A claim not
// created yet asks for an unknown count: its pod holds every free device. Two awaiting pods on
// one node hold every free device between them and are never victims (evicting one frees
// devices nobody can name). In each case the question stays expressible.
func TestAwaitingClaimPlacedConservatively(t *testing.T) {
	s, pre := awaitingState()
	without(s, "a", "a-cheap")
	s.run("a-low", "a", 100, "1", 0, 1, 2)
	s.run("a-five", "a", 100, "1", 4)
	p, _ := bindAwaiting(s, "numa2", "a", 2, NUMAAttribute)
	model, _ := solveFor(t, s, tArgs(), []*corev1.Pod{pre}, nil)
	if got := devicesOf(model, "pod/"+string(p.UID)); got != "numa1/pci2/gpu5,numa1/pci3/gpu6,numa1/pci3/gpu7" {
		t.Fatalf("the NUMA-scoped awaiting pod holds %q, want NUMA 1's three free devices (gpu3 stays free)", got)
	}

	// Its claim not created yet: the count is unknown, so every free device.
	p.Spec.ResourceClaims[0].ResourceClaimName = nil
	p.Spec.ResourceClaims[0].ResourceClaimTemplateName = ptr.To("template")
	model, _ = solveFor(t, s, tArgs(), []*corev1.Pod{pre}, nil)
	if got := devicesOf(model, "pod/"+string(p.UID)); got != "numa0/pci1/gpu3,numa1/pci2/gpu5,numa1/pci3/gpu6,numa1/pci3/gpu7" {
		t.Fatalf("the pod without a claim yet holds %q, want every free device", got)
	}

	// Two awaiting pods on a: every free device between them, neither a victim.
	s2, pre2 := awaitingState()
	without(s2, "a", "a-cheap")
	p1, _ := bindAwaiting(s2, "first", "a", 2, "")
	p2, _ := bindAwaiting(s2, "second", "a", 1, "")
	p1.Spec.Priority, p2.Spec.Priority = ptr.To[int32](100), ptr.To[int32](100)
	fromAPI(s2)
	m := newMirror(false)
	defer m.close()
	holdsFresh(t, m, s2, pre2)
	model, plan := solveFor(t, s2, tArgs(), []*corev1.Pod{pre2}, nil)
	h1, h2 := devicesOf(model, "pod/"+string(p1.UID)), devicesOf(model, "pod/"+string(p2.UID))
	if strings.Count(h1+","+h2, "gpu") != 8 || workloadOf(model, "pod/"+string(p1.UID)).Preemptible || workloadOf(model, "pod/"+string(p2.UID)).Preemptible {
		t.Fatalf("two awaiting pods hold %q and %q; want all 8 devices between them, both pinned", h1, h2)
	}
	if got := strings.Join(victimNames(t, model, plan), ","); plan.Hosts[0] != "b" || got != "b0,b1,b2,b3" {
		t.Fatalf("plan on %v victims %s; want b's four pods (a's devices are all awaited)", plan.Hosts, got)
	}
}

// The scheduler's allocation in flight (made in Reserve, not yet written) is exact: the pod
// holds those devices, and the node is derived again at every sync, since the allocation
// moves no version when it is written or dropped.
func TestAwaitingClaimInFlightIsExact(t *testing.T) {
	s, pre := awaitingState()
	p, c := bindAwaiting(s, "binding", "a", 2, "")
	fromAPI(s)
	s.in.PendingAllocation = func(uid types.UID) *resourcev1.AllocationResult {
		if uid != c.UID {
			return nil
		}
		return &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
			{Request: "gpus", Driver: tDriver, Pool: "a", Device: "gpu6"}, {Request: "gpus", Driver: tDriver, Pool: "a", Device: "gpu7"}}}}
	}
	m := newMirror(false)
	defer m.close()
	holdsFresh(t, m, s, pre)
	model, _ := solveFor(t, s, tArgs(), []*corev1.Pod{pre}, nil)
	if got := devicesOf(model, "pod/"+string(p.UID)); got != "numa1/pci3/gpu6,numa1/pci3/gpu7" {
		t.Fatalf("the pod with an allocation in flight holds %q, want gpu6,gpu7", got)
	}
	if st := m.nodes["a"]; st == nil || !st.volatile {
		t.Fatalf("node a is not derived again at the next sync: %+v", st)
	}
	d0 := m.derived
	s.in.PendingAllocation = nil // dropped (the binding failed): back to every device it may be given
	holdsFresh(t, m, s, pre)
	if m.derived-d0 != 1 {
		t.Fatalf("after the allocation in flight was dropped: %d nodes derived, want 1", m.derived-d0)
	}
}
