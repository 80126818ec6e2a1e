// SPDX-License-Identifier: MIT

package e2e

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The states of issue 33: the cheapest room is one the preemptor cannot use, or would be if
// the scheduler's other knowledge (CPU, PDBs, unlabelled nodes) were ignored. Each is small
// (3 or 4 nodes) and watched briefly, so that both GPU modes with both schedulers add little
// to CI. The preemptor asks for 4 GPUs with no NUMA requirement, so the extended-resource runs
// are compared too.

// SchedulerKnowsScenarios are the issue-33 states, in the order they run; TopoPreempt must reach
// each one's optimum in both GPU modes (Scenario.ReachOptimum).
func SchedulerKnowsScenarios() []func() *Scenario {
	var out []func() *Scenario
	for _, build := range []func() *Scenario{excludedBySelector, excludedByTaint, excludedByAffinity, cpuHeldHigh, cpuHeldLow, pdbProtected, unlabelledNode} {
		out = append(out, func() *Scenario {
			s := build()
			s.ReachOptimum = true
			return s
		})
	}
	return out
}

// cheapRoomOnA: node a's GPUs 0-3 are one low pod of cost 5 (the cheapest room anywhere),
// node b's are four low pods of cost 10, every other GPU is held by high pods. Where a is
// excluded the optimum is b's four pods (40), which is also what stock takes.
func cheapRoomOnA(prefix string) (*Scenario, []NodeSpec) {
	nodes := rackNodes(prefix, 1, 3)
	a, b, c := nodes[0].Name, nodes[1].Name, nodes[2].Name
	fill := []FillPod{{Name: a + "-cheap", Node: a, Priority: "low", GPUs: span(0, 3), Cost: 5},
		{Name: a + "-high", Node: a, Priority: "high", GPUs: span(4, 7)}}
	for _, p := range onePerGPU(b, "low", 0, 1, 2, 3) {
		p.Cost = 10
		fill = append(fill, p)
	}
	fill = append(fill, FillPod{Name: b + "-high", Node: b, Priority: "high", GPUs: span(4, 7)})
	fill = append(fill, onePerGPU(c, "high", span(0, 7)...)...)
	return &Scenario{
		Nodes: nodes, Fill: withDefaultCosts(fill),
		Preemptor:   PreemptorSpec{Name: "gpu4", Priority: "preemptor", Pods: 1, GPUsPerPod: 4},
		Schedulable: true, Optimum: "the four low pods of " + b, OptimumCost: 40, OptimumVictims: 4,
		Watch: 15 * time.Second,
	}, nodes
}

// excludedBySelector: the preemptor's nodeSelector excludes node a.
func excludedBySelector() *Scenario {
	s, nodes := cheapRoomOnA("sel")
	s.Name, s.Title = "excluded-by-selector", "the cheapest room is on a node the preemptor's nodeSelector excludes"
	nodes[0].Labels = map[string]string{"pool": "inference"}
	for i := 1; i < len(nodes); i++ {
		nodes[i].Labels = map[string]string{"pool": "training"}
	}
	s.Preemptor.NodeSelector = map[string]string{"pool": "training"}
	return s
}

// excludedByTaint: node a has a NoSchedule taint the preemptor does not tolerate.
func excludedByTaint() *Scenario {
	s, nodes := cheapRoomOnA("taint")
	s.Name, s.Title = "excluded-by-taint", "the cheapest room is on a node with a NoSchedule taint the preemptor does not tolerate"
	nodes[0].Taints = []corev1.Taint{{Key: "dedicated", Value: "inference", Effect: corev1.TaintEffectNoSchedule}}
	return s
}

// excludedByAffinity: the preemptor's required node affinity says NotIn node a.
func excludedByAffinity() *Scenario {
	s, nodes := cheapRoomOnA("aff")
	s.Name, s.Title = "excluded-by-affinity", "the cheapest room is on a node the preemptor's required node affinity excludes (NotIn)"
	s.Preemptor.AvoidNode = nodes[0].Name
	return s
}

// cpuHeldHigh: a high-priority CPU-only pod holds 100 of node a's 128 cores; the preemptor
// asks for 100 cores, so a cannot take it whatever is evicted.
func cpuHeldHigh() *Scenario {
	s, nodes := cheapRoomOnA("cpuh")
	s.Name, s.Title = "cpu-held-high", "a high-priority CPU-only pod holds the cheapest room's CPU; the preemptor asks for 100 cores"
	holdCPU(s, nodes[0].Name, "high")
	return s
}

// holdCPU adds a CPU-only pod of `priority` (cost 1) holding 100 of node's 128 cores, and makes
// the preemptor ask for 100 cores: the node takes it only if that pod goes.
func holdCPU(s *Scenario, node, priority string) {
	s.Fill = append(s.Fill, FillPod{Name: node + "-cpu", Node: node, Priority: priority, CPUMilli: 100000, Cost: 1})
	s.Preemptor.CPUMilli = 100000
}

// cpuHeldLow: the same CPU-only pod at priority low-b, cost 1: evicting it with a's GPU pod
// (5 + 1) is the optimum. Stock prefers b, whose highest victim priority is lower (40).
func cpuHeldLow() *Scenario {
	s, nodes := cheapRoomOnA("cpul")
	s.Name, s.Title = "cpu-held-low", "a low-priority CPU-only pod holds the cheapest room's CPU: evicting it too is the optimum"
	holdCPU(s, nodes[0].Name, "low-b")
	s.Optimum, s.OptimumCost, s.OptimumVictims = "the GPU pod and the CPU pod of "+nodes[0].Name, 6, 2
	return s
}

// pdbProtected: node a's pod (cost 5) is protected by a PDB that allows no disruption; node
// b's 4-GPU pod costs 10. Fewest PDB violations first: b, as stock does.
func pdbProtected() *Scenario {
	nodes := rackNodes("pdb", 1, 3)
	a, b, c := nodes[0].Name, nodes[1].Name, nodes[2].Name
	fill := []FillPod{{Name: a + "-serving", Node: a, Priority: "low", GPUs: span(0, 3), Cost: 5, Labels: map[string]string{"app": "serving"}},
		{Name: a + "-high", Node: a, Priority: "high", GPUs: span(4, 7)},
		{Name: b + "-batch", Node: b, Priority: "low", GPUs: span(0, 3), Cost: 10},
		{Name: b + "-high", Node: b, Priority: "high", GPUs: span(4, 7)}}
	fill = append(fill, onePerGPU(c, "high", span(0, 7)...)...)
	return &Scenario{
		Name: "pdb-protected", Title: "the cheaper victim is protected by a PodDisruptionBudget that allows no disruption",
		Nodes: nodes, Fill: withDefaultCosts(fill), PDBs: []PDBSpec{{Name: "serving", Selector: map[string]string{"app": "serving"}}},
		Preemptor:   PreemptorSpec{Name: "gpu4", Priority: "preemptor", Pods: 1, GPUsPerPod: 4},
		Schedulable: true, Optimum: "the unprotected pod of " + b + " (no PDB violated)", OptimumCost: 10, OptimumVictims: 1,
		Watch: 15 * time.Second,
	}
}

// unlabelledNode: a fourth node, full of high pods, has no rack label. Node a's room is one
// mid pod of cost 4; b's is four low pods of cost 10, which stock takes (lower priorities).
func unlabelledNode() *Scenario {
	nodes := rackNodes("unlab", 1, 4)
	nodes[3].NoRack = true
	a, b, c, d := nodes[0].Name, nodes[1].Name, nodes[2].Name, nodes[3].Name
	fill := []FillPod{{Name: a + "-mid", Node: a, Priority: "mid", GPUs: span(0, 3), Cost: 4},
		{Name: a + "-high", Node: a, Priority: "high", GPUs: span(4, 7)}}
	for _, p := range onePerGPU(b, "low", 0, 1, 2, 3) {
		p.Cost = 10
		fill = append(fill, p)
	}
	fill = append(fill, FillPod{Name: b + "-high", Node: b, Priority: "high", GPUs: span(4, 7)})
	fill = append(fill, onePerGPU(c, "high", span(0, 7)...)...)
	fill = append(fill, onePerGPU(d, "high", span(0, 7)...)...)
	return &Scenario{
		Name: "unlabelled-node", Title: "one full node has no rack label; the cheapest room is a mid pod",
		Nodes: nodes, Fill: withDefaultCosts(fill),
		Preemptor:   PreemptorSpec{Name: "gpu4", Priority: "preemptor", Pods: 1, GPUsPerPod: 4},
		Schedulable: true, Optimum: "the mid pod of " + a, OptimumCost: 4, OptimumVictims: 1,
		Watch: 15 * time.Second,
	}
}
