// SPDX-License-Identifier: MIT

package topopreempt

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// crowdState has two nodes of 8 extended-resource GPUs. Node a: a-cheap (GPUs 0-3, cost 1)
// and a-low (GPUs 4-7, cost 5), both low priority. Node b: b-cheap (cost 2) and b-high (never
// a victim). A 4-GPU preemptor alone takes a-cheap (1); an 8-GPU one fits only on a (6).
func crowdState() *tState {
	s, run := extNodes("a", "b")
	run(extPod("a-cheap", 100, 4, "1"), "a")
	run(extPod("a-low", 100, 4, "5"), "a")
	run(extPod("b-cheap", 100, 4, "2"), "b")
	run(extPod("b-high", 1000, 4, "1"), "b")
	fromAPI(s)
	return s
}

// pending is a pending extended-resource preemptor created at second `at`.
func pending(name string, prio int32, gpus int64, at int64) *corev1.Pod {
	p := extPod(name, prio, gpus, "0")
	p.CreationTimestamp = metav1.NewTime(time.Unix(1_000_000+at, 0))
	return p
}

// decideTogether asks a fresh mirror for pre, with the other pending pods `all`.
func decideTogether(t *testing.T, s *tState, pre *corev1.Pod, all ...*corev1.Pod) *decision {
	t.Helper()
	args := extArgs()
	others := PendingPreemptors(args, &s.in, append([]*corev1.Pod{pre}, all...), []*corev1.Pod{pre}, nil, nil)
	mr := newMirror(true)
	defer mr.close()
	d, err := mr.decideWith(args, &s.in, []*corev1.Pod{pre}, nil, others)
	if err != nil {
		t.Fatalf("decide: %v", err)
	}
	return d
}

// The preemptor in hand defers where planning together is cheaper, and keeps its own plan
// where it is not: the cases of together.go's rule, each against the plan alone.
func TestPlannedTogetherInTheSchedulersOrder(t *testing.T) {
	for _, c := range []struct {
		name    string
		others  []*corev1.Pod
		victims string
		choice  string
		queued  int
	}{
		{"alone", nil, "a-cheap", "alone", 0},
		// A higher-priority preemptor takes a-cheap first (the scheduler lets it take a lower
		// nominee's room): evicting a-cheap for pre would be wasted.
		{"higher priority first", []*corev1.Pod{pending("q", 900, 4, 5)}, "b-cheap", "deferred", 1},
		// The same shape, equal priority, created earlier: either order costs 3; pre keeps
		// its own (cheaper) plan.
		{"equal priority, no gain", []*corev1.Pod{pending("q", 500, 4, -5)}, "a-cheap", "alone", 1},
		// An earlier 8-GPU preemptor fits only on a: with pre first it is infeasible, in the
		// scheduler's order both are placed (6 + 2): pre defers.
		{"equal priority, both placed", []*corev1.Pod{pending("q", 500, 8, -5)}, "b-cheap", "deferred", 1},
		// Created in the same second: the larger request goes first, and pre defers.
		{"same second, larger first", []*corev1.Pod{pending("q", 500, 8, 0)}, "b-cheap", "deferred", 1},
		// Created after pre: planned after it, it cannot change pre's plan.
		{"later", []*corev1.Pod{pending("q", 500, 8, 5)}, "a-cheap", "alone", 1},
	} {
		s := crowdState()
		pre := pending("pre", 500, 4, 0)
		d := decideTogether(t, s, pre, c.others...)
		if got := podNames(d); got != c.victims || d.together.Choice != c.choice || d.together.Queued != c.queued {
			t.Errorf("%s: victims %s, %s; want %s, %s with %d queued", c.name, got, d.together, c.victims, c.choice, c.queued)
		}
	}
}

// The queued plan the plugin acts on is one the plugin could have made: the C cluster is left
// as the question found it (no queued preemptor stays), and asking alone afterwards on the
// same mirror answers as before.
func TestQueueLeavesTheMirrorAsItWas(t *testing.T) {
	s := crowdState()
	args := extArgs()
	pre := pending("pre", 500, 4, 0)
	mr := newMirror(true)
	defer mr.close()
	others := PendingPreemptors(args, &s.in, []*corev1.Pod{pending("q", 900, 4, 5)}, []*corev1.Pod{pre}, nil, nil)
	d, err := mr.decideWith(args, &s.in, []*corev1.Pod{pre}, nil, others)
	if err != nil || podNames(d) != "b-cheap" {
		t.Fatalf("together: %v, victims %s", err, podNames(d))
	}
	d, err = mr.decide(args, &s.in, []*corev1.Pod{pre}, nil)
	if err != nil || podNames(d) != "a-cheap" || d.together.Queued != 0 {
		t.Fatalf("alone after: %v, victims %s (%s)", err, podNames(d), d.together)
	}
}

// PodDisruptionBudgets keep their priority in the queue: it is planned under the protection of
// the pass that made the plan alone, so deferring to q takes a-low (5), not the guarded b-cheap
// (2).
func TestQueueKeepsPDBsFirst(t *testing.T) {
	s := crowdState()
	for _, p := range s.in.Pods["b"] {
		if p.Name == "b-cheap" {
			p.Labels = map[string]string{"app": "guarded"}
		}
	}
	s.in.PDBs = append(s.in.PDBs, guardedPDB())
	d := decideTogether(t, s, pending("pre", 500, 4, 0), pending("q", 900, 4, 5))
	if podNames(d) != "a-low" || d.together.Choice != "deferred" || d.pdb.Violations != 0 {
		t.Fatalf("victims %s, %s, %s; want a-low, deferred, no violation", podNames(d), d.together, d.pdb)
	}
}

// Which pods are pending preemptors: unbound (nor assumed), not nominated, not in flight, of the same
// scheduler and GPU kind, above some running pod's priority, not PreemptNever; a gang whole
// (its pending pods, none bound), in the scheduler's order.
func TestPendingPreemptors(t *testing.T) {
	s := crowdState()
	pre := pending("pre", 500, 4, 0)
	bound := pending("bound", 500, 4, 1)
	bound.Spec.NodeName = "a"
	nominated := pending("nominated", 500, 4, 1)
	nominated.Status.NominatedNodeName = "a"
	nominee := pending("nominee", 500, 4, 1)
	s.in.Nominated = append(s.in.Nominated, Nominee{Pod: nominee, Node: "b"})
	other := pending("other-scheduler", 500, 4, 1)
	other.Spec.SchedulerName = "someone-else"
	never := pending("never", 500, 4, 1)
	never.Spec.PreemptionPolicy = ptr.To(corev1.PreemptNever)
	lowest := pending("lowest", 100, 4, 1)
	flying := pending("in-flight", 500, 4, 1)
	assumed := pending("assumed", 500, 4, 1) // being bound: on a node in the snapshot only
	inSnapshot := assumed.DeepCopy()
	inSnapshot.Spec.NodeName = "b"
	s.in.Pods["b"] = append(s.in.Pods["b"], inSnapshot)
	noGPU := pending("no-gpu", 500, 0, 1)
	noGPU.Spec.Containers = nil
	g1, g2 := inGroup(pending("g-0", 500, 8, 3), "g"), inGroup(pending("g-1", 500, 8, 3), "g")
	h1, h2 := inGroup(pending("h-0", 500, 8, 3), "h"), inGroup(pending("h-1", 500, 8, 3), "h")
	h2.Spec.NodeName = "b"
	groups := map[string]*schedulingv1beta1.PodGroup{}
	for i, name := range []string{"g", "h"} {
		groups[name] = &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			UID: types.UID("pg-" + name), CreationTimestamp: metav1.NewTime(time.Unix(1_000_002+int64(i), 0))}}
	}
	s.in.PodGroup = func(ns, name string) *schedulingv1beta1.PodGroup { return groups[name] }
	late, early, high := pending("late", 500, 4, 9), pending("early", 500, 4, -9), pending("high", 900, 4, 20)
	all := []*corev1.Pod{pre, bound, nominated, nominee, other, never, lowest, flying, assumed, noGPU, g1, g2, h1, h2, late, early, high}
	got := PendingPreemptors(extArgs(), &s.in, all, []*corev1.Pod{pre}, nil, map[types.UID]bool{flying.UID: true})
	var names []string
	for _, p := range got {
		var pods []string
		for _, pod := range p.Pods {
			pods = append(pods, pod.Name)
		}
		names = append(names, strings.Join(pods, "+"))
	}
	if want := "high,early,g-0+g-1,late"; strings.Join(names, ",") != want {
		t.Fatalf("pending preemptors %v, want %s", names, want)
	}
	// A gang in hand does not list its own pods.
	got = PendingPreemptors(extArgs(), &s.in, all, []*corev1.Pod{g1, g2}, groups["g"], nil)
	for _, p := range got {
		if p.Group != nil && p.Group.Name == "g" {
			t.Fatalf("the gang in hand lists itself: %v", p.Pods)
		}
	}
}

// A pending preemptor whose spec refuses other nodes than the in-hand one's is left out: the
// model holds one eligibility per question. Here a taint on node a that pre tolerates and q
// does not.
func TestQueueLeavesOutOtherEligibility(t *testing.T) {
	s := crowdState()
	s.in.Nodes[0].Spec.Taints = []corev1.Taint{{Key: "reserved", Effect: corev1.TaintEffectNoSchedule}}
	pre := pending("pre", 500, 4, 0)
	pre.Spec.Tolerations = []corev1.Toleration{{Key: "reserved", Operator: corev1.TolerationOpExists}}
	d := decideTogether(t, s, pre, pending("q", 900, 4, 5))
	if podNames(d) != "a-cheap" || d.together.Queued != 0 || d.together.LeftOut != 1 {
		t.Fatalf("victims %s, %s; want a-cheap with q left out", podNames(d), d.together)
	}
}

// The scheduler's order: priority, then creation time, then the larger request, then uid.
func TestOrderKey(t *testing.T) {
	t0 := time.Unix(1, 0)
	for i, c := range []struct {
		a, b   orderKey
		before bool
	}{
		{orderKey{9, t0.Add(time.Hour), 1, "b"}, orderKey{5, t0, 16, "a"}, true},
		{orderKey{5, t0, 1, "b"}, orderKey{5, t0.Add(time.Second), 16, "a"}, true},
		{orderKey{5, t0, 16, "b"}, orderKey{5, t0, 4, "a"}, true},
		{orderKey{5, t0, 4, "a"}, orderKey{5, t0, 4, "b"}, true},
		{orderKey{5, t0, 4, "b"}, orderKey{5, t0, 4, "a"}, false},
	} {
		if got := c.a.before(c.b); got != c.before {
			t.Errorf("case %d: %v, want %v", i, got, c.before)
		}
	}
}

// guardedPDB allows no disruption of app=guarded.
func guardedPDB() *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "guard", ResourceVersion: "1"},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0}}
}

// What finding the pending preemptors adds to a PostFilter call on the 1,000-node state:
// every one of its 10,000 running pods listed (none pending but the preemptor).
func BenchmarkPendingPreemptors1000(b *testing.B) {
	s, pre := scaleState(1000)
	var all []*corev1.Pod
	for _, pods := range s.in.Pods {
		all = append(all, pods...)
	}
	all = append(all, pre)
	for b.Loop() {
		if got := PendingPreemptors(tArgs(), &s.in, all, []*corev1.Pod{pre}, nil, nil); len(got) != 0 {
			b.Fatalf("%d pending preemptors", len(got))
		}
	}
}
