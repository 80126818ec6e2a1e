// SPDX-License-Identifier: MIT

package topopreempt

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// queueState is two nodes whose NUMA 0 each holds four 1-GPU pods (cost 1 on a, 2 on b) and
// whose NUMA 1 each holds one dear 4-GPU pod; and two 4-GPU preemptors on one NUMA node each,
// p1 (priority 500) and p2 (400), which alone would both empty NUMA 0 of a.
func queueState(t *testing.T) (*Model, Workload, Workload) {
	t.Helper()
	s := newTState()
	s.node("a", "r0")
	s.node("b", "r0")
	for g := 0; g < 4; g++ {
		s.run(fmt.Sprintf("a%d", g), "a", 100, "1", g)
		s.run(fmt.Sprintf("b%d", g), "b", 100, "2", g)
	}
	s.run("a-dear", "a", 100, "100", 4, 5, 6, 7)
	s.run("b-dear", "b", 100, "100", 4, 5, 6, 7)
	s.claim("want1", 4, NUMAAttribute)
	s.claim("want2", 4, NUMAAttribute)
	m1, alone1 := solveFor(t, s, tArgs(), []*corev1.Pod{tPod("p1", 500, "want1", nil)}, nil)
	m2, alone2 := solveFor(t, s, tArgs(), []*corev1.Pod{tPod("p2", 400, "want2", nil)}, nil)
	if alone1.Hosts[0] != "a" || alone2.Hosts[0] != "a" || alone1.Cost != 4 || alone2.Cost != 4 {
		t.Fatalf("alone: p1 %+v, p2 %+v; want both on a at cost 4", alone1, alone2)
	}
	p1, p2 := m1.Preemptor, m2.Preemptor
	p2.ID = p1.ID + 1 // BuildModel numbers the one preemptor of its question after the workloads
	return m1, p1, p2
}

// Planned together, the two preemptors take two rooms, and no pod is a victim twice.
func TestQueuePlansPreemptorsTogether(t *testing.T) {
	m, p1, p2 := queueState(t)
	plans, err := SolveQueue(m, []Workload{p2, p1}, tArgs())
	if err != nil {
		t.Fatalf("SolveQueue: %v", err)
	}
	if len(plans) != 2 || plans[0].Preemptor != p1.ID || plans[1].Preemptor != p2.ID {
		t.Fatalf("outcomes %+v, want p1 then p2 (priority order)", plans)
	}
	for i, want := range []struct {
		host string
		cost float64
	}{{"a", 4}, {"b", 8}} {
		got := plans[i]
		if got.Status != "planned" || got.Plan == nil || got.Plan.Hosts[0] != want.host || got.Plan.Cost != want.cost {
			t.Fatalf("outcome %d: %+v (plan %+v), want planned on %s at cost %v", i, got, got.Plan, want.host, want.cost)
		}
	}
	seen := map[uint64]bool{}
	for _, qp := range plans {
		for _, v := range qp.Plan.Victims {
			if seen[v] {
				t.Fatalf("victim %d evicted for two preemptors", v)
			}
			seen[v] = true
		}
	}
}

// A queue kept beside a cluster keeps nominations while they hold, resumes one whose eviction
// is under way, rejects a preemptor listed twice, and refuses a bad preemptor by its index.
func TestQueueKeepsAndResumesNominations(t *testing.T) {
	m, p1, p2 := queueState(t)
	cl, err := newCluster(m.Levels, m.Domains)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.destroy()
	for i := range m.Workloads {
		if err := cl.start(&m.Workloads[i]); err != nil {
			t.Fatal(err)
		}
	}
	q, err := newQueue()
	if err != nil {
		t.Fatal(err)
	}
	defer q.destroy()
	statuses := func(plans []QueuedPlan) string {
		var out []string
		for _, qp := range plans {
			out = append(out, qp.Status)
		}
		return strings.Join(out, ",")
	}
	args := tArgs()
	first, err := cl.planQueue(q, []Workload{p1, p2}, args, "")
	if err != nil || statuses(first) != "planned,planned" {
		t.Fatalf("first call: %v %+v", err, first)
	}
	again, err := cl.planQueue(q, []Workload{p1, p2}, args, "")
	if err != nil || statuses(again) != "kept,kept" || again[0].Plan.Cost != first[0].Plan.Cost {
		t.Fatalf("second call: %v %+v, want both kept", err, again)
	}
	gone := first[0].Plan.Victims[0]
	if err := cl.finish(gone, "a victim"); err != nil {
		t.Fatal(err)
	}
	resumed, err := cl.planQueue(q, []Workload{p1, p2}, args, "")
	if err != nil || statuses(resumed) != "resumed,kept" {
		t.Fatalf("after an eviction: %v %+v, want resumed,kept", err, resumed)
	}
	if r := resumed[0]; len(r.Plan.Victims) != 3 || r.Plan.Hosts[0] != "a" || len(r.Moved) == 0 {
		t.Fatalf("resumed %+v (plan %+v), want the other 3 victims on a and the moved domains", r, r.Plan)
	}
	twice, err := cl.planQueue(q, []Workload{p1, p2, p1}, args, "")
	if err != nil || statuses(twice) != "kept,rejected,kept" || twice[1].Plan != nil ||
		!strings.Contains(twice[1].Error, "more than once") {
		t.Fatalf("listed twice: %v %+v", err, twice)
	}
	bad := p2
	bad.ReplicaScope = "socket"
	if _, err := cl.planQueue(q, []Workload{p1, bad}, args, ""); err == nil || !strings.Contains(err.Error(), "preemptors[1]") {
		t.Fatalf("bad preemptor: %v, want an error naming preemptors[1]", err)
	}
	after, err := cl.planQueue(q, []Workload{p1, p2}, args, "")
	if err != nil || statuses(after) != "kept,kept" {
		t.Fatalf("after the refused call: %v %+v, want the nominations intact", err, after)
	}
}
