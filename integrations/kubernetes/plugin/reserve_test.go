// SPDX-License-Identifier: MIT

package topopreempt

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const tExt = "example.com/gpu"

func extArgs() *Args {
	a := tArgs()
	a.ExtendedResource = tExt
	return a
}

// extPod is a pod asking for gpus of the extended resource.
func extPod(name string, prio int32, gpus int64, cost string) *corev1.Pod {
	p := tPod(name, prio, "", map[string]string{CostAnnotation: cost})
	p.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		tExt: *resource.NewQuantity(gpus, resource.DecimalSI)}}}}
	return p
}

// twoPreemptors is the issue-33 shape with the extended resource (8 GPUs a node): node a's
// room is one pod of cost 1 (a-cheap, GPUs 0-3 in the model), node b's four of cost 10; GPUs
// 4-7 are high pods. A first preemptor p1 (4 GPUs, priority p1Prio) is nominated to a; the
// second, pre (4 GPUs, priority prio), asks.
func twoPreemptors(t *testing.T, p1Prio, prio int32) (*tState, *corev1.Pod, *corev1.Pod) {
	t.Helper()
	s, run := extNodes("a", "b")
	run(extPod("a-cheap", 100, 4, "1"), "a")
	run(extPod("a-high", 1000, 4, "1"), "a")
	for i := 0; i < 4; i++ {
		run(extPod(fmt.Sprintf("b%d", i), 100, 1, "10"), "b")
	}
	run(extPod("b-high", 1000, 4, "1"), "b")
	p1 := extPod("p1", p1Prio, 4, "0")
	s.in.Nominated = []Nominee{{Pod: p1, Node: "a"}}
	return s, p1, extPod("pre", prio, 4, "0")
}

// extNodes is a state of nodes with 8 extended-resource GPUs in one rack, and how to run a pod
// on one of them.
func extNodes(names ...string) (*tState, func(p *corev1.Pod, node string)) {
	s := newTState()
	for _, n := range names {
		s.in.Nodes = append(s.in.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{
			corev1.LabelTopologyZone: "z", "topology.topopreempt.dev/block": "b", "topology.topopreempt.dev/rack": "r"}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{tExt: resource.MustParse("8"),
				corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourcePods: resource.MustParse("110")}}})
	}
	return s, func(p *corev1.Pod, node string) {
		p.Spec.NodeName = node
		s.in.Pods[node] = append(s.in.Pods[node], p)
	}
}

// solveBothExt is solveBoth with the extended resource.
func solveBothExt(t *testing.T, s *tState, pre *corev1.Pod) (*Model, *Plan, string) {
	t.Helper()
	args := extArgs()
	m, p := solveFor(t, s, args, []*corev1.Pod{pre}, nil)
	got := strings.Join(victimNames(t, m, p), ",")
	mp, victims, _, err := DecideAsPlugin(args, &s.in, []*corev1.Pod{pre}, nil)
	if err != nil {
		t.Fatalf("DecideAsPlugin: %v", err)
	}
	var names []string
	for _, w := range victims {
		for _, pod := range w.Pods {
			names = append(names, pod.Name)
		}
	}
	if strings.Join(names, ",") != got || mp.Cost != p.Cost || mp.Status != p.Status {
		t.Fatalf("fresh model: %s %s cost %g; mirror: %s %v cost %g", p.Status, got, p.Cost, mp.Status, names, mp.Cost)
	}
	return m, p, got
}

func terminate(s *tState, node, name string) *corev1.Pod {
	for _, p := range s.in.Pods[node] {
		if p.Name == name {
			p.DeletionTimestamp = &metav1.Time{}
			return p
		}
	}
	panic("no pod " + name)
}

func without(s *tState, node, name string) {
	kept := s.in.Pods[node][:0]
	for _, p := range s.in.Pods[node] {
		if p.Name != name {
			kept = append(kept, p)
		}
	}
	s.in.Pods[node] = kept
}

func heldPaths(m *Model, key string) string {
	var held []string
	for _, w := range m.Workloads {
		if w.Key == key {
			for _, e := range w.Entries {
				held = append(held, e.Path)
			}
		}
	}
	return strings.Join(held, ",")
}

// While p1's victim terminates, its room is p1's: the second preemptor neither evicts the
// victim again nor plans on a (whose free GPUs p1 fills), and pays for b's room; p1 itself,
// asking again, finds its room free. Fresh model and mirror agree on each question.
func TestRoomOfATerminatingVictimIsItsPreemptors(t *testing.T) {
	s, p1, pre := twoPreemptors(t, 500, 500)
	victim := terminate(s, "a", "a-cheap")
	s.in.EvictedFor = map[types.UID]types.UID{victim.UID: p1.UID}
	m, p, got := solveBothExt(t, s, pre)
	if got != "b0,b1,b2,b3" || p.Cost != 40 {
		t.Fatalf("second preemptor: victims %q cost %g; want b0..b3 at 40 (a-cheap is terminating for p1)", got, p.Cost)
	}
	if why := m.Ineligible["a"]; !strings.Contains(why, "reserved for nominated pod ns/p1") {
		t.Fatalf("node a: %q; want it reserved for p1", why)
	}
	for _, w := range m.Workloads {
		if len(w.Pods) == 1 && w.Pods[0].Name == "a-cheap" && w.Preemptible {
			t.Fatal("a terminating pod is a victim candidate")
		}
	}

	_, p, got = solveBothExt(t, s, p1)
	if p.Status != "no_preemption_needed" || got != "" {
		t.Fatalf("p1 asking again: %s, victims %q; want no_preemption_needed (its victim is gone for it)", p.Status, got)
	}
}

// Once the victim is gone, p1 (still pending) holds its room on a: the second preemptor of the
// same priority pays for b's room; one of higher priority takes the free room, as stock's
// filters count only nominees of at least the preemptor's priority.
func TestNominatedPodHoldsItsRoom(t *testing.T) {
	s, _, pre := twoPreemptors(t, 500, 500)
	without(s, "a", "a-cheap")
	m, p, got := solveBothExt(t, s, pre)
	if got != "b0,b1,b2,b3" || p.Cost != 40 {
		t.Fatalf("victims %q cost %g; want b0..b3 at 40 (p1 holds a's free GPUs)", got, p.Cost)
	}
	if _, ok := m.Ineligible["a"]; ok {
		t.Fatalf("node a is ineligible (%s); p1's room fits, so only its GPUs are held", m.Ineligible["a"])
	}
	// a-high holds dev0-3 (the model numbers a node's devices in its pods' order).
	if h := heldPaths(m, "nominated/uid-p1"); h != "numa-unknown/pcie-unknown/dev4,numa-unknown/pcie-unknown/dev5,numa-unknown/pcie-unknown/dev6,numa-unknown/pcie-unknown/dev7," {
		t.Fatalf("p1 holds %q; want a's four free GPUs and its requests", h)
	}

	higher := extPod("higher", 900, 4, "0")
	if _, p, _ := solveBothExt(t, s, higher); p.Status != "no_preemption_needed" {
		t.Fatalf("a preemptor above the nominee: %s; want no_preemption_needed (a's free room)", p.Status)
	}
}

// The plugin's own nomination carries the devices its plan chose: those are held, not the
// first free ones; a nominee whose room does not fit beside the node's pods closes the node.
func TestOwnNominationHoldsItsPlannedDevices(t *testing.T) {
	s, p1, pre := twoPreemptors(t, 500, 500)
	without(s, "a", "a-cheap")
	without(s, "a", "a-high")
	planned := []string{"numa-unknown/pcie-unknown/dev2", "numa-unknown/pcie-unknown/dev3", "numa-unknown/pcie-unknown/dev5", "numa-unknown/pcie-unknown/dev6"}
	s.in.Nominated = []Nominee{{Pod: p1, Node: "a", Devices: planned}}
	m, p, _ := solveBothExt(t, s, pre)
	if p.Status != "no_preemption_needed" {
		t.Fatalf("status %s; want no_preemption_needed beside p1 on a", p.Status)
	}
	if h := heldPaths(m, "nominated/uid-p1"); h != strings.Join(planned, ",")+"," {
		t.Fatalf("p1 holds %q; want its planned devices", h)
	}

	s2, p1, pre := twoPreemptors(t, 500, 500)
	p1.Spec.Containers[0].Resources.Requests[tExt] = resource.MustParse("12")
	m, _, got := solveBothExt(t, s2, pre)
	if !strings.Contains(m.Ineligible["a"], "reserved for nominated pod ns/p1") || got != "b0,b1,b2,b3" {
		t.Fatalf("a nominee that cannot fit: node a %q, victims %q; want a closed and b's room", m.Ineligible["a"], got)
	}
}

// With DRA a nominee with a ResourceClaim closes its node to preemptors of at most its
// priority, as the plugin's Filter closes it to the scheduler (DynamicResources does not count
// nominations' devices); a lower nominee or one without claims does not.
func TestDRANomineeClosesItsNode(t *testing.T) {
	for _, c := range []struct {
		name    string
		nominee *corev1.Pod
		victims string
	}{
		{"equal priority", tPod("p1", 500, "p1-want", nil), "b0,b1,b2,b3"},
		{"lower priority", tPod("p1", 100, "p1-want", nil), "a-cheap"},
		{"no claim", tPod("p1", 500, "", nil), "a-cheap"},
	} {
		s := cheapOnA(t)
		s.claim("p1-want", 4, NUMAAttribute)
		s.in.Nominated = []Nominee{{Pod: c.nominee, Node: "a"}}
		m, _, _, got := solveBoth(t, s, tPod("pre", 500, "want", nil), nil)
		if got != c.victims {
			t.Errorf("%s: victims %q, want %q (node a: %q)", c.name, got, c.victims, m.Ineligible["a"])
		}
	}
}

// One mirror across questions: a reservation is released before each sync, so the nominee
// bound on the devices it held meanwhile is no conflict, and each answer is a fresh model's.
func TestMirrorReleasesReservations(t *testing.T) {
	s, p1, pre := twoPreemptors(t, 500, 500)
	without(s, "a", "a-cheap")
	fromAPI(s)
	mr := newMirror(true)
	defer mr.close()
	d, err := mr.decide(extArgs(), &s.in, []*corev1.Pod{pre}, nil)
	if err != nil {
		t.Fatalf("decide: %v", err)
	}
	if d.reserved != 1 || podNames(d) != "b0,b1,b2,b3" {
		t.Fatalf("reserved %d, victims %s; want 1 and b0..b3", d.reserved, podNames(d))
	}
	// p1 binds on a's free GPUs (those its reservation held).
	s.in.Nominated = nil
	bound := p1.DeepCopy()
	bound.Spec.NodeName = "a"
	s.in.Pods["a"] = append(s.in.Pods["a"], bound)
	fromAPI(s)
	d, err = mr.decide(extArgs(), &s.in, []*corev1.Pod{pre}, nil)
	if err != nil {
		t.Fatalf("decide after p1 bound: %v", err)
	}
	m, want := solveFor(t, s, extArgs(), []*corev1.Pod{pre}, nil)
	if d.reserved != 0 || d.plan.Cost != want.Cost || d.plan.Status != want.Status || mr.rebuilds != 1 {
		t.Fatalf("after p1 bound: reserved %d, %+v, %d rebuilds; fresh %+v (%v)", d.reserved, d.plan, mr.rebuilds, want, victimNames(t, m, want))
	}
}

// The Filter's rule: a DRA pod is kept off a node where another pod of at least its priority
// is nominated with a ResourceClaim; not by itself, a lower nominee, or a nominee without claims.
func TestReservedAgainst(t *testing.T) {
	p := tPod("p", 500, "want", nil)
	cases := []struct {
		name     string
		nominee  *corev1.Pod
		reserved bool
	}{
		{"equal priority with a claim", tPod("n", 500, "n-want", nil), true},
		{"higher priority with a claim", tPod("n", 900, "n-want", nil), true},
		{"lower priority", tPod("n", 100, "n-want", nil), false},
		{"no claim", tPod("n", 900, "", nil), false},
		{"itself", p, false},
		{"a pod of its own gang", inGroup(tPod("n", 900, "n-want", nil), "g"), false},
		{"a pod of another gang", inGroup(tPod("n", 900, "n-want", nil), "h"), true},
	}
	inGroup(p, "g")
	for _, c := range cases {
		got := reservedAgainst(p, []*corev1.Pod{c.nominee})
		if (got != "") != c.reserved {
			t.Errorf("%s: %q, want reserved=%v", c.name, got, c.reserved)
		}
	}
}

func inGroup(p *corev1.Pod, group string) *corev1.Pod {
	p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &group}
	return p
}
