// SPDX-License-Identifier: MIT

package e2e

import (
	"fmt"
	"math/rand"
	"sort"
	"time"
)

// GPUMode is how pods ask for GPUs.
type GPUMode string

const (
	// DRA: a ResourceClaim per pod; the scheduler allocates devices (and NUMA constraints).
	DRA GPUMode = "dra"
	// ExtendedResource: a count of GPUResource, as with a device plugin; NUMA is invisible.
	ExtendedResource GPUMode = "extres"
)

// PreemptorSpec is the high-priority workload submitted after the fill: Pods pods of
// GPUsPerPod GPUs each (one ResourceClaim per pod), all GPUs of a pod on one NUMA node when
// SameNUMA (a DRA matchAttribute constraint), a gang under Group when set.
type PreemptorSpec struct {
	Name, Priority string
	Pods           int
	GPUsPerPod     int
	SameNUMA       bool
	Group          *GroupSpec
	// NodeSelector, AvoidNode (a required node affinity NotIn that hostname) and CPUMilli (0:
	// one core) go on every preemptor pod.
	NodeSelector map[string]string
	AvoidNode    string
	CPUMilli     int
	// AvoidPodsLabelled: a required pod anti-affinity (per node) against pods with these labels.
	AvoidPodsLabelled map[string]string
}

func (p PreemptorSpec) cpuOf() int {
	if p.CPUMilli == 0 {
		return 1000
	}
	return p.CPUMilli
}

// Scenario is one initial state plus one preemptor. Optimum is the minimum-cost victim set,
// derived by hand from the state (the cost of a victim is its CostAnnotation).
type Scenario struct {
	Name, Title     string
	Mode            GPUMode
	Nodes           []NodeSpec
	FillGroups      []GroupSpec
	Fill            []FillPod
	PDBs            []PDBSpec
	Preemptor       PreemptorSpec
	Schedulable     bool          // some victim set lets the preemptor run inside its requirement
	Optimum         string        // the minimum-cost victim set, in words
	OptimumCost     float64       // its cost
	OptimumVictims  int           // its size
	Watch           time.Duration // how long to wait for the preemptor to run (or, if not Schedulable, to watch)
	FillRunningWait time.Duration
	// Preemptors > 1 submits that many copies of Preemptor one after another on the same
	// scheduler, each once the previous one ran or gave up (runSequence); 0 or 1: one.
	Preemptors int
	// OwnControlPlane runs each variant on a control plane started for it and stopped after
	// it, instead of clearing the shared one: on a loaded 2-core machine deleting 10,000 pods
	// and their claims took longer than the variant's run and timed out (CI, 27 November),
	// while a fresh etcd and kube-apiserver start in about 4 s.
	OwnControlPlane bool
	// Variants names the variants that run this scenario; empty: every variant.
	Variants []string
	// Crowd, when set, are preemptors created at once (or, OneAfterAnother, each once the
	// previous one runs) instead of Preemptor (crowd.go); Preemptor is then their template.
	Crowd           []PreemptorSpec
	OneAfterAnother bool
	// ReachOptimum: every variant but the baseline must run the preemptor at exactly the
	// optimum's cost (-baseline; the issue-33 states, where everything that matters is visible
	// to TopoPreempt in both GPU modes).
	ReachOptimum bool
	// WhatIfDiffers says why topopreempt-whatif's plan on this state is not the plugin's
	// evictions ("": it must be, where the state is checked at all; see whatif.go).
	WhatIfDiffers string
}

// defaultCost prices a victim by priority (priority + 1), the way the Slurm integration's
// priority_weighted cost model does, unless a scenario gives a cost of its own.
func withDefaultCosts(fill []FillPod) []FillPod {
	for i := range fill {
		if fill[i].Cost == 0 {
			fill[i].Cost = float64(PriorityClasses[fill[i].Priority]) + 1
		}
	}
	return fill
}

func rackNodes(prefix string, racks, perRack int) []NodeSpec {
	var nodes []NodeSpec
	for r := 0; r < racks; r++ {
		for k := 0; k < perRack; k++ {
			nodes = append(nodes, NodeSpec{Name: fmt.Sprintf("%s-r%d-n%d", prefix, r, k), Zone: "zone-a",
				Block: "block-0", Rack: fmt.Sprintf("rack-%d", r)})
		}
	}
	return nodes
}

// onePerGPU fills the given GPUs of node with 1-GPU pods of one priority class.
func onePerGPU(node, priority string, gpus ...int) []FillPod {
	pods := make([]FillPod, len(gpus))
	for k, g := range gpus {
		pods[k] = FillPod{Name: fmt.Sprintf("%s-g%d", node, g), Node: node, Priority: priority, GPUs: []int{g}}
	}
	return pods
}

func span(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// Scenarios returns every scenario, each in both GPU modes; scaleNodes sizes the KWOK scale
// scenario (10 pods a node), run in the modes scaleModes with scalePreemptors preemptors one
// after another (1: the single preemptor) by the variants scaleVariants (empty: every one).
func Scenarios(scaleNodes int, scaleModes []GPUMode, scalePreemptors int, scaleVariants []string) []*Scenario {
	var out []*Scenario
	builds := []func() *Scenario{numaFragmented, cheapestNotLowest, gangOneRack, unsatisfiable}
	builds = append(builds, SchedulerKnowsScenarios()...)
	builds = append(builds, gangRefused)
	builds = append(builds, arrivingTogether, crowd, crowdSequential)
	for _, build := range builds {
		for _, mode := range []GPUMode{DRA, ExtendedResource} {
			s := build()
			s.Mode = mode
			out = append(out, s)
		}
	}
	if scaleNodes > 0 {
		for _, mode := range scaleModes {
			s := scale(scaleNodes, scalePreemptors)
			s.Mode = mode
			s.Variants = scaleVariants
			out = append(out, s)
		}
	}
	return out
}

// numaFragmented: one pod needs 4 GPUs on one NUMA node (DRA matchAttribute on numaNode).
// Node a has 3 free GPUs split 2 + 1 over its NUMA nodes; no NUMA node anywhere has 4 free.
// Freeing NUMA 0 of node a takes its 2 low-b pods (cost 2 x 111 = 222); freeing NUMA 1 takes
// its 3 low pods (3 x 101 = 303). Kubernetes' reprieve keeps the more important pods first
// (low-b), so it settles for the 3 low ones; its node ranking also prefers lower priorities.
func numaFragmented() *Scenario {
	nodes := rackNodes("numa", 1, 4)
	a, b, c, d := nodes[0].Name, nodes[1].Name, nodes[2].Name, nodes[3].Name
	var fill []FillPod
	fill = append(fill, onePerGPU(a, "low-b", 2, 3)...)  // gpu0, gpu1 free
	fill = append(fill, onePerGPU(a, "low", 5, 6, 7)...) // gpu4 free
	fill = append(fill, onePerGPU(b, "high", span(0, 7)...)...)
	fill = append(fill, onePerGPU(c, "low", span(0, 7)...)...) // a whole NUMA node costs 4 x 101
	fill = append(fill, onePerGPU(d, "high", span(0, 7)...)...)
	return &Scenario{
		Name: "numa-fragmented", Title: "4 GPUs on one NUMA node (DRA) on fragmented nodes",
		Nodes: nodes, Fill: withDefaultCosts(fill),
		Preemptor:   PreemptorSpec{Name: "numa4", Priority: "preemptor", Pods: 1, GPUsPerPod: 4, SameNUMA: true},
		Schedulable: true, Optimum: "the 2 low-b pods on NUMA 0 of " + a, OptimumCost: 222, OptimumVictims: 2,
		Watch: 30 * time.Second,
	}
}

// cheapestNotLowest: mixed priorities where the cheapest victim set is not the lowest-priority
// pods. Node a's NUMA 0 holds four 1-GPU low pods that are far from a checkpoint (cost 10
// each); node b's NUMA 0 holds one 4-GPU mid pod that just checkpointed (cost 4). Kubernetes
// prefers the node whose highest victim priority is lowest: node a, 4 victims, cost 40.
func cheapestNotLowest() *Scenario {
	nodes := rackNodes("mixed", 1, 4)
	a, b := nodes[0].Name, nodes[1].Name
	var fill []FillPod
	for _, p := range onePerGPU(a, "low", 0, 1, 2, 3) {
		p.Cost = 10
		fill = append(fill, p)
	}
	fill = append(fill, onePerGPU(a, "high", 4, 5, 6, 7)...)
	fill = append(fill, FillPod{Name: b + "-mid4", Node: b, Priority: "mid", GPUs: span(0, 3), Cost: 4})
	fill = append(fill, onePerGPU(b, "high", 4, 5, 6, 7)...)
	for _, n := range nodes[2:] {
		fill = append(fill, onePerGPU(n.Name, "high", span(0, 7)...)...)
	}
	return &Scenario{
		Name: "cheapest-not-lowest", Title: "mixed priorities: the cheapest victims are not the lowest-priority ones",
		Nodes: nodes, Fill: withDefaultCosts(fill),
		Preemptor:   PreemptorSpec{Name: "numa4", Priority: "preemptor", Pods: 1, GPUsPerPod: 4, SameNUMA: true},
		Schedulable: true, Optimum: "the one mid pod on " + b, OptimumCost: 4, OptimumVictims: 1,
		Watch: 30 * time.Second,
	}
}

// gangOneRack: a PodGroup gang of 2 pods x 8 GPUs that must land in one rack
// (schedulingConstraints.topology key = the rack label). Rack 0 holds 16 1-GPU low pods,
// rack 1 four 4-GPU low pods, rack 2 a node of low pods next to a node of high pods.
// Cheapest: rack 1, 4 victims (cost 404); rack 0 costs 16 victims (1616).
func gangOneRack() *Scenario {
	nodes := rackNodes("gang", 3, 2)
	var fill []FillPod
	fill = append(fill, onePerGPU(nodes[0].Name, "low", span(0, 7)...)...)
	fill = append(fill, onePerGPU(nodes[1].Name, "low", span(0, 7)...)...)
	for _, n := range nodes[2:4] {
		fill = append(fill, FillPod{Name: n.Name + "-a", Node: n.Name, Priority: "low", GPUs: span(0, 3)},
			FillPod{Name: n.Name + "-b", Node: n.Name, Priority: "low", GPUs: span(4, 7)})
	}
	fill = append(fill, onePerGPU(nodes[4].Name, "low", span(0, 7)...)...)
	fill = append(fill, onePerGPU(nodes[5].Name, "high", span(0, 7)...)...)
	group := &GroupSpec{Name: "gang", Priority: "preemptor", MinCount: 2, TopologyKey: RackLabel}
	return &Scenario{
		Name: "gang-one-rack", Title: "PodGroup gang (2 x 8 GPUs) constrained to one rack",
		Nodes: nodes, Fill: withDefaultCosts(fill),
		Preemptor:   PreemptorSpec{Name: "gang", Priority: "preemptor", Pods: 2, GPUsPerPod: 8, Group: group},
		Schedulable: true, Optimum: "the 4 low pods of rack-1", OptimumCost: 404, OptimumVictims: 4,
		ReachOptimum: true, Watch: 45 * time.Second,
	}
}

// unsatisfiable: every NUMA node has one GPU held by a high pod, so no NUMA node can ever
// give 4 GPUs to the preemptor. Any eviction is wasted.
func unsatisfiable() *Scenario {
	nodes := rackNodes("unsat", 1, 2)
	var fill []FillPod
	for _, n := range nodes {
		fill = append(fill, onePerGPU(n.Name, "high", 0, 4)...)
		fill = append(fill, onePerGPU(n.Name, "low", 1, 2, 3, 5, 6, 7)...)
	}
	return &Scenario{
		Name: "unsatisfiable", Title: "unsatisfiable: no NUMA node can ever hold 4 free GPUs",
		Nodes: nodes, Fill: withDefaultCosts(fill),
		Preemptor:   PreemptorSpec{Name: "numa4", Priority: "preemptor", Pods: 1, GPUsPerPod: 4, SameNUMA: true},
		Schedulable: false, Optimum: "none: evict nothing", OptimumCost: 0, OptimumVictims: 0,
		Watch: 20 * time.Second,
	}
}

// scale: n KWOK nodes (racks of 10, blocks of 10 racks), 10 pods each: 4 one-GPU pods and
// 2 two-GPU pods (all 8 GPUs held) plus 4 CPU-only pods, priorities and costs drawn from a
// fixed seed; a quarter of the nodes are all high. One 4-GPU same-NUMA preemptor, or
// preemptors of them one after another. The optimum is the cheapest set of GPU pods on one NUMA
// node of a node without high pods there (for k preemptors: the k cheapest such NUMA nodes),
// which the harness computes from the fill.
func scale(n, preemptors int) *Scenario {
	rng := rand.New(rand.NewSource(37))
	var nodes []NodeSpec
	for i := 0; i < n; i++ {
		rack := i / 10
		nodes = append(nodes, NodeSpec{Name: fmt.Sprintf("kwok-%04d", i), Zone: fmt.Sprintf("zone-%d", rack/50),
			Block: fmt.Sprintf("block-%d", rack/10), Rack: fmt.Sprintf("rack-%d", rack)})
	}
	low := []string{"low", "low-b", "mid"}
	var fill []FillPod
	for i, node := range nodes {
		pick := func() string {
			if i%4 == 3 {
				return "high"
			}
			return low[rng.Intn(len(low))]
		}
		// NUMA 0: gpu0, gpu1 single, gpu2-3 double; NUMA 1: gpu4-5 double, gpu6, gpu7 single.
		layout := [][]int{{0}, {1}, {2, 3}, {4, 5}, {6}, {7}}
		for k, gpus := range layout {
			fill = append(fill, FillPod{Name: fmt.Sprintf("%s-p%d", node.Name, k), Node: node.Name,
				Priority: pick(), GPUs: gpus, Cost: float64(1 + rng.Intn(20))})
		}
		for k := 0; k < 4; k++ {
			fill = append(fill, FillPod{Name: fmt.Sprintf("%s-c%d", node.Name, k), Node: node.Name,
				Priority: pick(), Cost: float64(1 + rng.Intn(5))})
		}
	}
	s := &Scenario{
		Name: "kwok-scale", Title: fmt.Sprintf("%d KWOK nodes, %d pods: 4 GPUs on one NUMA node", n, len(fill)),
		Nodes: nodes, Fill: fill,
		Preemptor:   PreemptorSpec{Name: "numa4", Priority: "preemptor", Pods: 1, GPUsPerPod: 4, SameNUMA: true},
		Schedulable: true, Watch: 60 * time.Second, FillRunningWait: 15 * time.Minute,
		OwnControlPlane: true,
	}
	if preemptors > 1 {
		s.Preemptors = preemptors
		s.Title += fmt.Sprintf(", %d preemptors one after another", preemptors)
		s.OptimumCost, s.OptimumVictims, s.Optimum = cheapestNUMAs(s, preemptors)
		return s
	}
	s.OptimumCost, s.OptimumVictims, s.Optimum = cheapestNUMA(s)
	return s
}

// numaKey names one NUMA node of one Kubernetes node.
type numaKey struct {
	node string
	numa int
}

// emptiableNUMAs lists the NUMA nodes whose GPU pods are all below the preemptor's priority,
// cheapest to empty first (then fewer pods, then by name), with each one's cost and pod count.
func emptiableNUMAs(s *Scenario) ([]numaKey, map[numaKey]float64, map[numaKey]int) {
	cost := map[numaKey]float64{}
	count := map[numaKey]int{}
	blocked := map[numaKey]bool{}
	pre := PriorityClasses[s.Preemptor.Priority]
	for _, p := range s.Fill {
		if len(p.GPUs) == 0 {
			continue
		}
		key := numaKey{p.Node, NUMAOf(p.GPUs[0])}
		if PriorityClasses[p.Priority] >= pre {
			blocked[key] = true
		}
		cost[key] += p.Cost
		count[key]++
	}
	var eligible []numaKey
	for key := range cost {
		if !blocked[key] {
			eligible = append(eligible, key)
		}
	}
	sort.Slice(eligible, func(i, j int) bool {
		a, b := eligible[i], eligible[j]
		if cost[a] != cost[b] {
			return cost[a] < cost[b]
		}
		if count[a] != count[b] {
			return count[a] < count[b]
		}
		return a.node+fmt.Sprint(a.numa) < b.node+fmt.Sprint(b.numa)
	})
	return eligible, cost, count
}

// cheapestNUMAs is cheapestNUMA for k lone 4-GPU same-NUMA preemptors: each needs a whole
// NUMA node of its own (every one holds exactly 4 GPUs, all busy), so the minimum is the k
// cheapest eligible NUMA nodes, which is also what choosing the cheapest one k times gives.
func cheapestNUMAs(s *Scenario, k int) (float64, int, string) {
	eligible, cost, count := emptiableNUMAs(s)
	if k > len(eligible) {
		k = len(eligible)
	}
	total, victims := 0.0, 0
	for _, key := range eligible[:k] {
		total += cost[key]
		victims += count[key]
	}
	return total, victims, fmt.Sprintf("the GPU pods of the %d cheapest NUMA nodes (%d pods)", k, victims)
}

// cheapestNUMA finds the cheapest single NUMA node to empty of GPU pods, all of them below
// the preemptor's priority: exact for a lone 4-GPU same-NUMA preemptor on full 4-GPU NUMA nodes.
// -1 when there is none.
func cheapestNUMA(s *Scenario) (float64, int, string) {
	eligible, cost, count := emptiableNUMAs(s)
	best, bestKey := -1.0, numaKey{}
	if len(eligible) > 0 {
		bestKey = eligible[0]
		best = cost[bestKey]
	}
	return best, count[bestKey], fmt.Sprintf("the %d GPU pods of NUMA %d on %s", count[bestKey], bestKey.numa, bestKey.node)
}
