// SPDX-License-Identifier: MIT

package e2e

import "time"

// gangRefused (issue 33, item 3): the check before evicting, for a gang. A PodGroup of 2 x 8
// GPUs whose pods keep off any node holding a pod labelled app=ps (a required pod
// anti-affinity, which the model does not express). Node a's GPUs are one low pod of cost 5,
// the cheapest, but a high-priority CPU-only app=ps pod runs there; b's and c's are one low
// pod each, of cost 20 and 30. The model plans a and b (25); the PodGroup algorithm, run with
// those victims removed (and, with DRA, their claims released), places only one pod, so
// TopoPreempt evicts nobody and falls back to the stock PodGroupPostFilter: with the extended
// resource that evicts b's and c's pods (50, the true optimum), and with DRA stock never
// preempts, so nobody is evicted. Evicting a's pod would be wasted in both modes.
func gangRefused() *Scenario {
	nodes := rackNodes("refused", 1, 3)
	a, b, c := nodes[0].Name, nodes[1].Name, nodes[2].Name
	ps := map[string]string{"app": "ps"}
	fill := []FillPod{{Name: a + "-cheap", Node: a, Priority: "low", GPUs: span(0, 7), Cost: 5},
		{Name: a + "-ps", Node: a, Priority: "high", Labels: ps, Cost: 1},
		{Name: b + "-batch", Node: b, Priority: "low", GPUs: span(0, 7), Cost: 20},
		{Name: c + "-batch", Node: c, Priority: "low", GPUs: span(0, 7), Cost: 30}}
	group := &GroupSpec{Name: "gang", Priority: "preemptor", MinCount: 2}
	return &Scenario{
		Name: "gang-refused", Title: "a PodGroup's plan the simulation refuses (pod anti-affinity the model does not see)",
		Nodes: nodes, Fill: withDefaultCosts(fill),
		Preemptor: PreemptorSpec{Name: "gang", Priority: "preemptor", Pods: 2, GPUsPerPod: 8, Group: group,
			AvoidPodsLabelled: ps},
		Schedulable: true, Optimum: "the pods of " + b + " and " + c, OptimumCost: 50, OptimumVictims: 2,
		WhatIfDiffers: "the model does not express pod anti-affinity: its plan (a and b) is the one the simulation refuses",
		Watch:         15 * time.Second,
	}
}
