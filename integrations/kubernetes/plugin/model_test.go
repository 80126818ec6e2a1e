// SPDX-License-Identifier: MIT

package topopreempt

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const tDriver = "gpu.example.com"

// tState is a small cluster in API objects: nodes with 8 DRA GPUs (gpu0-3 on NUMA 0, gpu4-7
// on NUMA 1, two per PCIe root) in racks, and pods holding exact GPUs through claims.
type tState struct{ in Inputs }

func newTState() *tState {
	return &tState{in: Inputs{Pods: map[string][]*corev1.Pod{}, Now: time.Unix(1_000_000, 0)}}
}

func (s *tState) node(name, rack string) {
	s.in.Nodes = append(s.in.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		corev1.LabelTopologyZone: "z", "topology.topopreempt.dev/block": "b", "topology.topopreempt.dev/rack": rack,
		corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"),
			corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")}}})
	devs := make([]resourcev1.Device, 8)
	for i := range devs {
		devs[i] = resourcev1.Device{Name: fmt.Sprintf("gpu%d", i), Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			NUMAAttribute:     {IntValue: ptr.To(int64(i / 4))},
			PCIeRootAttribute: {StringValue: ptr.To(fmt.Sprintf("pci%d", i/2))}}}
	}
	s.in.Slices = append(s.in.Slices, &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-gpus"},
		Spec: resourcev1.ResourceSliceSpec{Driver: tDriver, Pool: resourcev1.ResourcePool{Name: name}, NodeName: ptr.To(name), Devices: devs}})
}

// claim makes a claim for count GPUs; match names a matchAttribute ("" none).
func (s *tState) claim(name string, count int64, match string) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpus",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}}}}}}
	if match != "" {
		c.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{MatchAttribute: ptr.To(resourcev1.FullyQualifiedName(match))}}
	}
	s.in.Claims = append(s.in.Claims, c)
	return c
}

func tPod(name string, prio int32, claim string, annotations map[string]string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Annotations: annotations},
		Spec: corev1.PodSpec{Priority: ptr.To(prio)}}
	if claim != "" {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To(claim)}}
	}
	return p
}

// run places a running pod holding exactly `gpus` of `node`.
func (s *tState) run(name, node string, prio int32, cost string, gpus ...int) *corev1.Pod {
	c := s.claim(name+"-gpus", int64(len(gpus)), "")
	res := make([]resourcev1.DeviceRequestAllocationResult, len(gpus))
	for i, g := range gpus {
		res[i] = resourcev1.DeviceRequestAllocationResult{Request: "gpus", Driver: tDriver, Pool: node, Device: fmt.Sprintf("gpu%d", g)}
	}
	c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: res}}
	p := tPod(name, prio, c.Name, map[string]string{CostAnnotation: cost})
	p.Spec.NodeName = node
	s.in.Pods[node] = append(s.in.Pods[node], p)
	return p
}

func tArgs() *Args {
	a := DefaultArgs()
	a.Drivers = []string{tDriver}
	a.Cost = []CostTerm{{Model: "extra", Floor: ptr.To(0.0)}}
	return &a
}

func victimNames(t *testing.T, m *Model, p *Plan) []string {
	t.Helper()
	var out []string
	for _, id := range p.Victims {
		for _, w := range m.Workloads {
			if w.ID == id {
				for _, pod := range w.Pods {
					out = append(out, pod.Name)
				}
			}
		}
	}
	return out
}

func solveFor(t *testing.T, s *tState, args *Args, pods []*corev1.Pod, g *schedulingv1beta1.PodGroup) (*Model, *Plan) {
	t.Helper()
	m, err := BuildModel(args, &s.in, pods, g)
	if err != nil {
		t.Fatalf("BuildModel: %v", err)
	}
	p, err := Solve(m, args)
	if err != nil {
		t.Fatalf("Solve: %v", err)
	}
	return m, p
}

// A 4-GPU pod that must sit on one NUMA node: the cheapest NUMA node to empty is chosen,
// not the one with the most free GPUs (whose emptying would leave the GPUs split).
func TestNUMAScopedClaimPicksCheapestNUMANode(t *testing.T) {
	s := newTState()
	s.node("a", "r0")
	s.node("b", "r0")
	// Node a: NUMA 0 has two 1-GPU pods (cost 5 each) and 2 free; NUMA 1 has 1 free + a 3-GPU pod (cost 50).
	s.run("a0", "a", 100, "5", 0)
	s.run("a1", "a", 100, "5", 1)
	s.run("a5", "a", 100, "50", 5, 6, 7)
	// Node b is full of one expensive 8-GPU pod.
	s.run("b0", "b", 100, "1000", 0, 1, 2, 3, 4, 5, 6, 7)
	s.claim("want", 4, NUMAAttribute)
	m, p := solveFor(t, s, tArgs(), []*corev1.Pod{tPod("preemptor", 500, "want", nil)}, nil)
	if p.Status != "optimal" || p.Cost != 10 || p.Hosts[0] != "a" {
		t.Fatalf("plan %+v, want optimal cost 10 on a", p)
	}
	if got := strings.Join(victimNames(t, m, p), ","); got != "a0,a1" {
		t.Fatalf("victims %s, want a0,a1", got)
	}
	// The pod's devices lie on NUMA 0 of a (its pod slot and CPU come from the node's pool).
	if len(p.Devices) != 4 {
		t.Fatalf("devices %+v, want 4", p.Devices)
	}
	for _, d := range p.Devices {
		if d.Host != "a" || !strings.HasPrefix(d.Path, "numa0/") {
			t.Fatalf("devices %+v, want all on NUMA 0 of a", p.Devices)
		}
	}
}

// Every NUMA node holds a pod of a higher priority: infeasible, nobody is evicted.
func TestUnsatisfiableEvictsNobody(t *testing.T) {
	s := newTState()
	s.node("a", "r0")
	s.run("h0", "a", 1000, "1", 0)
	s.run("h1", "a", 1000, "1", 4)
	s.run("l", "a", 100, "1", 1, 2, 5)
	s.claim("want", 4, NUMAAttribute)
	_, p := solveFor(t, s, tArgs(), []*corev1.Pod{tPod("preemptor", 500, "want", nil)}, nil)
	if p.Status != "infeasible" || len(p.Victims) != 0 {
		t.Fatalf("plan %+v, want infeasible with no victim", p)
	}
}

// A gang of two 8-GPU pods constrained to one rack: the rack with the cheaper victims wins,
// and a disruptionMode=All victim PodGroup goes whole.
func TestGangInOneRackAndWholeVictimGroups(t *testing.T) {
	s := newTState()
	for _, n := range []string{"r0a", "r0b"} {
		s.node(n, "r0")
	}
	for _, n := range []string{"r1a", "r1b"} {
		s.node(n, "r1")
	}
	s.node("r2a", "r2")
	for i := 0; i < 8; i++ {
		s.run(fmt.Sprintf("r0a-%d", i), "r0a", 100, "10", i)
		s.run(fmt.Sprintf("r0b-%d", i), "r0b", 100, "10", i)
	}
	// Rack 1: one victim PodGroup (disruptionMode All) of two 8-GPU pods, cost 30 each.
	for _, n := range []string{"r1a", "r1b"} {
		p := s.run("g-"+n, n, 100, "30", 0, 1, 2, 3, 4, 5, 6, 7)
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("victims")}
	}
	s.run("r2-high", "r2a", 1000, "1", 0)
	s.in.PodGroup = func(ns, name string) *schedulingv1beta1.PodGroup {
		if name != "victims" {
			return nil
		}
		return &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: schedulingv1beta1.PodGroupSpec{DisruptionMode: &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}}}}
	}
	group := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gang"},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{
			Topology: []schedulingv1beta1.TopologyConstraint{{Key: "topology.topopreempt.dev/rack"}}}}}
	s.claim("g0", 8, "")
	s.claim("g1", 8, "")
	pods := []*corev1.Pod{tPod("gang-0", 500, "g0", nil), tPod("gang-1", 500, "g1", nil)}
	m, p := solveFor(t, s, tArgs(), pods, group)
	if p.Status != "optimal" || p.Cost != 60 {
		t.Fatalf("plan %+v, want optimal cost 60 (rack 1)", p)
	}
	if got := strings.Join(victimNames(t, m, p), ","); got != "g-r1a,g-r1b" {
		t.Fatalf("victims %s, want the whole victim PodGroup", got)
	}
	if len(m.Workloads) != 16+1+1 {
		t.Fatalf("%d workloads, want 18 (the PodGroup is one)", len(m.Workloads))
	}
	hosts := strings.Join(p.Hosts, ",")
	if hosts != "r1a,r1b" && hosts != "r1b,r1a" {
		t.Fatalf("gang hosts %s, want rack 1's two nodes", hosts)
	}
}

// What the model cannot express is *Unsupported (the plugin falls back); a malformed cost
// annotation is an error naming the pod.
func TestUnsupportedAndBadInput(t *testing.T) {
	s := newTState()
	s.node("a", "r0")
	c := s.claim("sel", 1, "")
	c.Spec.Devices.Requests[0].Exactly.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "true"}}}
	var u *Unsupported
	if _, err := BuildModel(tArgs(), &s.in, []*corev1.Pod{tPod("p", 500, "sel", nil)}, nil); !errors.As(err, &u) {
		t.Fatalf("a CEL selector: got %v, want Unsupported", err)
	}
	if _, err := BuildModel(tArgs(), &s.in, []*corev1.Pod{tPod("p", 500, "", nil)}, nil); !errors.As(err, &u) {
		t.Fatalf("a pod without GPUs: got %v, want Unsupported", err)
	}
	s.claim("ok", 1, "")
	s.run("bad", "a", 100, "lots", 0)
	_, err := BuildModel(tArgs(), &s.in, []*corev1.Pod{tPod("p", 500, "ok", nil)}, nil)
	if err == nil || !strings.Contains(err.Error(), "ns/bad") || !strings.Contains(err.Error(), CostAnnotation) {
		t.Fatalf("bad annotation: got %v, want an error naming ns/bad and %s", err, CostAnnotation)
	}
	other := tPod("p", 500, "ok", nil)
	other.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		"example.com/nic": resource.MustParse("1")}}}}
	if _, err := BuildModel(tArgs(), &s.in, []*corev1.Pod{other}, nil); !errors.As(err, &u) || !strings.Contains(err.Error(), "example.com/nic") {
		t.Fatalf("another extended resource: got %v, want Unsupported naming it", err)
	}
}

// Extended-resource GPUs: a count per node, no NUMA; the cheapest node is emptied enough.
func TestExtendedResourceMode(t *testing.T) {
	s := newTState()
	args := tArgs()
	args.ExtendedResource = "example.com/gpu"
	for _, n := range []string{"a", "b"} {
		s.in.Nodes = append(s.in.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{
			corev1.LabelTopologyZone: "z", "topology.topopreempt.dev/block": "b", "topology.topopreempt.dev/rack": "r"}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"example.com/gpu": resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}}})
	}
	mk := func(name, node string, gpus int64, cost string) {
		p := tPod(name, 100, "", map[string]string{CostAnnotation: cost})
		p.Spec.NodeName = node
		p.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"example.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}}}}
		s.in.Pods[node] = append(s.in.Pods[node], p)
	}
	mk("a1", "a", 2, "7")
	mk("a2", "a", 2, "7")
	mk("b1", "b", 4, "9")
	want := tPod("preemptor", 500, "", nil)
	want.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"example.com/gpu": resource.MustParse("4")}}}}
	m, p := solveFor(t, s, args, []*corev1.Pod{want}, nil)
	if got := strings.Join(victimNames(t, m, p), ","); got != "b1" || p.Cost != 9 {
		t.Fatalf("victims %s cost %v, want b1 at 9", got, p.Cost)
	}
}
