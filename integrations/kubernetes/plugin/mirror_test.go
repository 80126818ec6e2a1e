// SPDX-License-Identifier: MIT

package topopreempt

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
	if m.rebuilds != 1 || m.starts != 240 || m.finishes != 0 {
		t.Fatalf("first sync: %d rebuilds, %d starts, %d finishes; want 1, 240 (the GPU pods), 0", m.rebuilds, m.starts, m.finishes)
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

// Repeated questions on an unchanged 1,000-node state: what PostFilter pays once warm.
func BenchmarkMirrorDecide1000(b *testing.B) {
	s, pre := scaleState(1000)
	versioned(s)
	m := newMirror(false)
	defer m.close()
	if _, err := m.decide(tArgs(), &s.in, []*corev1.Pod{pre}, nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := m.decide(tArgs(), &s.in, []*corev1.Pod{pre}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// A new preemptor each time on a warm mirror: the decider starts cold, the state does not.
func BenchmarkMirrorNewPreemptor1000(b *testing.B) {
	s, pre := scaleState(1000)
	versioned(s)
	m := newMirror(false)
	defer m.close()
	if _, err := m.decide(tArgs(), &s.in, []*corev1.Pod{pre}, nil); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		p := tPod(fmt.Sprintf("pre%d", i), 500, "pre-gpus", nil)
		if _, err := m.decide(tArgs(), &s.in, []*corev1.Pod{p}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
