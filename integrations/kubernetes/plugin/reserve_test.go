// SPDX-License-Identifier: MIT

package topopreempt

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// twoPreemptors is cheapOnA with a first preemptor p1 (4 GPUs in one NUMA node) nominated to
// node a, its room (a-cheap, cost 1) planned, and a second one, pre, of `prio`, asking.
func twoPreemptors(t *testing.T, p1Prio, prio int32) (*tState, *corev1.Pod, *corev1.Pod) {
	t.Helper()
	s := cheapOnA(t)
	s.claim("p1-want", 4, NUMAAttribute)
	p1 := tPod("p1", p1Prio, "p1-want", nil)
	s.in.Nominated = []Nominee{{Pod: p1, Node: "a"}}
	return s, p1, tPod("pre", prio, "want", nil)
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

// While p1's victim terminates, its room is p1's: the second preemptor neither evicts the
// victim again nor plans on a (whose free GPUs p1 fills), and pays for b's room; p1 itself,
// asking again, finds its room free. Fresh model and mirror agree on each question.
func TestRoomOfATerminatingVictimIsItsPreemptors(t *testing.T) {
	s, p1, pre := twoPreemptors(t, 500, 500)
	victim := terminate(s, "a", "a-cheap")
	s.in.EvictedFor = map[types.UID]types.UID{victim.UID: p1.UID}
	m, p, _, got := solveBoth(t, s, pre, nil)
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

	_, p, _, got = solveBoth(t, s, p1, nil)
	if p.Status != "no_preemption_needed" || got != "" {
		t.Fatalf("p1 asking again: %s, victims %q; want no_preemption_needed (its victim is gone for it)", p.Status, got)
	}
}

// Once the victim is gone, p1 (still pending) holds its room on a's NUMA node 0: the second
// preemptor of the same priority pays for b's room; one of higher priority takes the free
// room, as stock's filters count only nominees of at least the preemptor's priority.
func TestNominatedPodHoldsItsRoom(t *testing.T) {
	s, _, pre := twoPreemptors(t, 500, 500)
	without(s, "a", "a-cheap")
	m, p, _, got := solveBoth(t, s, pre, nil)
	if got != "b0,b1,b2,b3" || p.Cost != 40 {
		t.Fatalf("victims %q cost %g; want b0..b3 at 40 (p1 holds a's free GPUs)", got, p.Cost)
	}
	if _, ok := m.Ineligible["a"]; ok {
		t.Fatalf("node a is ineligible (%s); p1's room fits, so only its GPUs are held", m.Ineligible["a"])
	}
	var held []string
	for _, w := range m.Workloads {
		if w.Key == "nominated/uid-p1" {
			if w.Preemptible {
				t.Fatal("a nominee is a victim candidate")
			}
			for _, e := range w.Entries {
				held = append(held, e.Path)
			}
		}
	}
	if strings.Join(held, ",") != "numa0/pci0/gpu0,numa0/pci0/gpu1,numa0/pci1/gpu2,numa0/pci1/gpu3," {
		t.Fatalf("p1 holds %q; want a's free NUMA node 0 and its requests", held)
	}

	higher := tPod("higher", 900, "want", nil)
	if _, p, _, _ := solveBoth(t, s, higher, nil); p.Status != "no_preemption_needed" {
		t.Fatalf("a preemptor above the nominee: %s; want no_preemption_needed (a's free room)", p.Status)
	}
}

// The plugin's own nomination carries the devices its plan chose: those are held, not the
// first free ones; a nominee whose room does not fit beside the node's pods closes the node.
func TestOwnNominationHoldsItsPlannedDevices(t *testing.T) {
	s, p1, pre := twoPreemptors(t, 500, 500)
	without(s, "a", "a-cheap")
	without(s, "a", "a-high")
	s.in.Nominated = []Nominee{{Pod: p1, Node: "a", Devices: []string{"numa1/pci2/gpu4", "numa1/pci2/gpu5", "numa1/pci3/gpu6", "numa1/pci3/gpu7"}}}
	m, p, _, _ := solveBoth(t, s, pre, nil)
	if p.Status != "no_preemption_needed" {
		t.Fatalf("status %s; want no_preemption_needed on a's NUMA node 0", p.Status)
	}
	for _, w := range m.Workloads {
		if w.Key == "nominated/uid-p1" && w.Entries[0].Path != "numa1/pci2/gpu4" {
			t.Fatalf("p1 holds %+v; want its planned devices", w.Entries)
		}
	}

	s2, p1, pre := twoPreemptors(t, 500, 500)
	s2.claim("p1-more", 12, "")
	p1.Spec.ResourceClaims[0].ResourceClaimName = ptrTo("p1-more")
	m, _, _, got := solveBoth(t, s2, pre, nil)
	if !strings.Contains(m.Ineligible["a"], "reserved for nominated pod ns/p1") || got != "b0,b1,b2,b3" {
		t.Fatalf("a nominee that cannot fit: node a %q, victims %q; want a closed and b's room", m.Ineligible["a"], got)
	}
}

// One mirror across questions: a reservation is released before each sync, so the nominee
// bound on the devices it held meanwhile is no conflict, and each answer is a fresh model's.
func TestMirrorReleasesReservations(t *testing.T) {
	s, p1, pre := twoPreemptors(t, 500, 500)
	without(s, "a", "a-cheap")
	fromAPI(s)
	mr := newMirror(false)
	defer mr.close()
	d, err := mr.decide(tArgs(), &s.in, []*corev1.Pod{pre}, nil)
	if err != nil {
		t.Fatalf("decide: %v", err)
	}
	if d.reserved != 1 || podNames(d) != "b0,b1,b2,b3" {
		t.Fatalf("reserved %d, victims %s; want 1 and b0..b3", d.reserved, podNames(d))
	}
	// p1 binds on a's NUMA node 0 (the devices its reservation held).
	s.in.Nominated = nil
	bound := s.run("p1-bound", "a", 500, "1", 0, 1, 2, 3)
	bound.UID = p1.UID
	fromAPI(s)
	d, err = mr.decide(tArgs(), &s.in, []*corev1.Pod{pre}, nil)
	if err != nil {
		t.Fatalf("decide after p1 bound: %v", err)
	}
	if want := fresh(t, s, pre); d.reserved != 0 || d.plan.Cost != want.Cost || d.plan.Status != want.Status || mr.rebuilds != 1 {
		t.Fatalf("after p1 bound: reserved %d, %+v, %d rebuilds; fresh %+v", d.reserved, d.plan, mr.rebuilds, want)
	}
}

func ptrTo(s string) *string { return &s }
