// SPDX-License-Identifier: MIT

package topopreempt

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// cheapOnA is the issue-33 shape: node a's NUMA 0 is the cheapest room (one pod, cost 1),
// node b's NUMA 0 costs 4 x 10.
func cheapOnA(t *testing.T) *tState {
	t.Helper()
	s := newTState()
	s.node("a", "r0")
	s.node("b", "r0")
	s.run("a-cheap", "a", 100, "1", 0, 1, 2, 3)
	s.run("a-high", "a", 1000, "1", 4, 5, 6, 7)
	for i := 0; i < 4; i++ {
		s.run("b"+string(rune('0'+i)), "b", 100, "10", i)
	}
	s.run("b-high", "b", 1000, "1", 4, 5, 6, 7)
	s.claim("want", 4, NUMAAttribute)
	return s
}

func requests(p *corev1.Pod, cpu string) *corev1.Pod {
	p.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu)}}}}
	return p
}

// solveBoth answers on a fresh model (the what-if path) and through the mirror (the plugin's
// path) and checks that they agree; it returns the victims' names.
func solveBoth(t *testing.T, s *tState, pre *corev1.Pod, g *schedulingv1beta1.PodGroup) (*Model, *Plan, PDBOutcome, string) {
	t.Helper()
	pods := []*corev1.Pod{pre}
	m, err := BuildModel(tArgs(), &s.in, pods, g)
	if err != nil {
		t.Fatalf("BuildModel: %v", err)
	}
	p, pdb, err := SolvePDBFirst(m, s.in.PDBs, tArgs(), "")
	if err != nil {
		t.Fatalf("SolvePDBFirst: %v", err)
	}
	got := strings.Join(victimNames(t, m, p), ",")
	mp, victims, mpdb, err := DecideAsPlugin(tArgs(), &s.in, pods, g)
	if err != nil {
		t.Fatalf("DecideAsPlugin: %v", err)
	}
	var names []string
	for _, w := range victims {
		for _, pod := range w.Pods {
			names = append(names, pod.Name)
		}
	}
	if strings.Join(names, ",") != got || mp.Cost != p.Cost || mp.Status != p.Status || mpdb != pdb {
		t.Fatalf("fresh model: %s %s cost %g %+v; mirror: %s %v cost %g %+v", p.Status, got, p.Cost, pdb, mp.Status, names, mp.Cost, mpdb)
	}
	return m, p, pdb, got
}

// A node the preemptor's nodeSelector, taints, affinity or unschedulable flag excludes is
// never a target and loses no victim; the scheduler's own refusal (Inputs.Refused) too.
func TestIneligibleNodesAreNeverTargets(t *testing.T) {
	excluders := map[string]func(s *tState, pre *corev1.Pod){
		"nodeSelector": func(s *tState, pre *corev1.Pod) {
			s.in.Nodes[1].Labels["pool"] = "train"
			pre.Spec.NodeSelector = map[string]string{"pool": "train"}
		},
		"taint": func(s *tState, _ *corev1.Pod) {
			s.in.Nodes[0].Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "infer", Effect: corev1.TaintEffectNoSchedule}}
		},
		"affinity NotIn": func(_ *tState, pre *corev1.Pod) {
			pre.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a"}}}}}}}}
		},
		"unschedulable": func(s *tState, _ *corev1.Pod) { s.in.Nodes[0].Spec.Unschedulable = true },
		"scheduler refused": func(s *tState, _ *corev1.Pod) {
			s.in.Refused = map[string]string{"a": "VolumeZone UnschedulableAndUnresolvable: zone conflict"}
		},
	}
	for name, exclude := range excluders {
		t.Run(name, func(t *testing.T) {
			s := cheapOnA(t)
			pre := tPod("preemptor", 500, "want", nil)
			m, p, _, got := solveBoth(t, s, pre, nil)
			if got != "a-cheap" {
				t.Fatalf("before excluding a: victims %s, want a-cheap", got)
			}
			exclude(s, pre)
			m, p, _, got = solveBoth(t, s, pre, nil)
			if _, ok := m.Ineligible["a"]; !ok || p.Hosts[0] != "b" || got != "b0,b1,b2,b3" || p.Cost != 40 {
				t.Fatalf("ineligible %v, plan on %v victims %s cost %g; want a ineligible and b's four pods at 40", m.Ineligible, p.Hosts, got, p.Cost)
			}
		})
	}
	// A toleration lets the preemptor back onto the tainted node.
	s := cheapOnA(t)
	s.in.Nodes[0].Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "infer", Effect: corev1.TaintEffectNoSchedule}}
	pre := tPod("preemptor", 500, "want", nil)
	pre.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "infer", Effect: corev1.TaintEffectNoSchedule}}
	if _, _, _, got := solveBoth(t, s, pre, nil); got != "a-cheap" {
		t.Fatalf("tolerated taint: victims %s, want a-cheap", got)
	}
}

// CPU is a pooled dimension: a CPU-only pod of higher priority that holds a node's CPU makes it
// useless to a preemptor asking for that CPU, and one of lower priority is a victim like any
// other.
func TestCPUAndCPUOnlyPods(t *testing.T) {
	s := cheapOnA(t)
	hog := requests(tPod("cpu-hog", 1000, "", map[string]string{CostAnnotation: "2"}), "60")
	hog.Spec.NodeName = "a"
	s.in.Pods["a"] = append(s.in.Pods["a"], hog)
	pre := requests(tPod("preemptor", 500, "want", nil), "10")
	_, p, _, got := solveBoth(t, s, pre, nil)
	if p.Hosts[0] != "b" || got != "b0,b1,b2,b3" {
		t.Fatalf("high CPU hog on a: plan on %v victims %s, want b's four pods", p.Hosts, got)
	}
	hog.Spec.Priority = ptr.To[int32](100)
	_, p, _, got = solveBoth(t, s, pre, nil)
	if p.Hosts[0] != "a" || got != "a-cheap,cpu-hog" || p.Cost != 3 {
		t.Fatalf("low CPU hog on a: plan on %v victims %s cost %g, want a-cheap,cpu-hog at 3", p.Hosts, got, p.Cost)
	}
	// A preemptor that needs no more CPU than is free leaves the CPU pod alone.
	pre = requests(tPod("preemptor", 500, "want", nil), "4")
	if _, _, _, got = solveBoth(t, s, pre, nil); got != "a-cheap" {
		t.Fatalf("small preemptor: victims %s, want a-cheap", got)
	}
}

// A node without a topology label has a domain of its own and never turns the model off;
// a gang constrained to that level never lands on it.
func TestUnlabelledNodes(t *testing.T) {
	s := cheapOnA(t)
	delete(s.in.Nodes[0].Labels, "topology.topopreempt.dev/rack")
	s.in.Nodes = append(s.in.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-only"}}) // no label, no GPU
	if _, p, _, got := solveBoth(t, s, tPod("preemptor", 500, "want", nil), nil); got != "a-cheap" || p.Hosts[0] != "a" {
		t.Fatalf("single pod: victims %s on %v, want a-cheap on a", got, p.Hosts)
	}
	s.claim("g0", 4, "")
	s.claim("g1", 4, "")
	g := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gang"},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{
			Topology: []schedulingv1beta1.TopologyConstraint{{Key: "topology.topopreempt.dev/rack"}}}}}
	pods := []*corev1.Pod{tPod("g-0", 500, "g0", nil), tPod("g-1", 500, "g1", nil)}
	m, err := BuildModel(tArgs(), &s.in, pods, g)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Ineligible["a"]; !ok {
		t.Fatalf("a rack-constrained gang: ineligible %v, want node a (no rack label)", m.Ineligible)
	}
	p, _, err := SolvePDBFirst(m, nil, tArgs(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range p.Hosts {
		if h == "a" {
			t.Fatalf("gang planned on the unlabelled node: %v", p.Hosts)
		}
	}
}

func pdb(name string, allowed int32, match map[string]string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: match}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed}}
}

// PDB violations come first: the cheapest plan that violates none wins over a cheaper one that
// violates one; when every plan violates one, the cheapest of those, proven; the count is
// DefaultPreemption's.
func TestPDBFirst(t *testing.T) {
	s := cheapOnA(t)
	for _, p := range s.in.Pods["a"] {
		p.Labels = map[string]string{"app": "serving"}
	}
	s.in.PDBs = []*policyv1.PodDisruptionBudget{pdb("serving", 0, map[string]string{"app": "serving"})}
	m, p, out, got := solveBoth(t, s, tPod("preemptor", 500, "want", nil), nil)
	if got != "b0,b1,b2,b3" || out.Violations != 0 || !out.Proven || out.Pass != "protected kept" {
		t.Fatalf("victims %s, %+v; want b's four pods, 0 violations proven", got, out)
	}
	if !m.Workloads[0].Protected {
		t.Fatalf("a-cheap is not marked protected")
	}
	// b's pods go high: only a's protected pod can make room; one violation, proven fewest.
	for _, pod := range s.in.Pods["b"] {
		pod.Spec.Priority = ptr.To[int32](1000)
	}
	_, _, out, got = solveBoth(t, s, tPod("preemptor", 500, "want", nil), nil)
	if got != "a-cheap" || out.Violations != 1 || !out.Proven || out.Pass != "protected allowed" {
		t.Fatalf("victims %s, %+v; want a-cheap with 1 violation proven", got, out)
	}
	// A budget that allows one disruption protects nobody; two of its pods are one violation.
	budget := pdb("b-pods", 1, map[string]string{"app": "b"})
	var victims []*corev1.Pod
	for i := 0; i < 2; i++ {
		p := tPod("x"+string(rune('0'+i)), 100, "", nil)
		p.Labels = map[string]string{"app": "b"}
		victims = append(victims, p)
	}
	if protected([]*policyv1.PodDisruptionBudget{budget}, victims[:1]) {
		t.Fatal("a budget with one disruption allowed protects a single pod")
	}
	if n := PDBViolations([]*policyv1.PodDisruptionBudget{budget}, victims); n != 1 {
		t.Fatalf("two pods under a budget of one: %d violations, want 1", n)
	}
	_ = p
}
