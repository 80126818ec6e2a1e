// SPDX-License-Identifier: MIT

package e2e

import (
	"context"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// arrivingTogether (issue 33, item 6): six single-pod preemptors of 4 GPUs each, created at
// once, on 8 nodes whose GPUs 4-7 are held by high pods. The rooms (GPUs 0-3 of a node) cost
// 5 (one 4-GPU low pod) on 3 nodes, 30 (two 2-GPU pods) on 2, and 40 (four 1-GPU pods) on 3.
// Each preemptor needs one room, and the rooms are independent, so the cheapest six rooms are
// the optimum: 3 x 5 + 2 x 30 + 40 = 115 with 11 victims. The preemptors are planned while
// the others' victims are still terminating: a room planned twice shows as a victim evicted
// for two preemptors, a wasted eviction, or a preemptor that does not run. No NUMA
// requirement, so that stock is compared in both GPU modes.
func arrivingTogether() *Scenario {
	nodes := rackNodes("together", 2, 4)
	var fill []FillPod
	for i, n := range nodes {
		switch {
		case i < 3:
			fill = append(fill, FillPod{Name: n.Name + "-room", Node: n.Name, Priority: "low", GPUs: span(0, 3), Cost: 5})
		case i < 5:
			fill = append(fill, FillPod{Name: n.Name + "-a", Node: n.Name, Priority: "low", GPUs: span(0, 1), Cost: 15},
				FillPod{Name: n.Name + "-b", Node: n.Name, Priority: "low", GPUs: span(2, 3), Cost: 15})
		default:
			for _, p := range onePerGPU(n.Name, "low", 0, 1, 2, 3) {
				p.Cost = 10
				fill = append(fill, p)
			}
		}
		fill = append(fill, onePerGPU(n.Name, "high", 4, 5, 6, 7)...)
	}
	return &Scenario{
		Name: "arriving-together", Title: "six 4-GPU preemptors created at once (issue 33, item 6)",
		Nodes: nodes, Fill: withDefaultCosts(fill),
		Preemptor:   PreemptorSpec{Name: "together", Priority: "preemptor", Pods: 6, GPUsPerPod: 4},
		Schedulable: true, Optimum: "the six cheapest rooms: three 4-GPU pods, two pairs of 2-GPU pods, four 1-GPU pods",
		OptimumCost: 115, OptimumVictims: 11, ReachOptimum: true,
		Watch: 40 * time.Second,
	}
}

// evictedTwice counts the fill pods that received the scheduler's Preempted event from more
// than one preemptor ("Preempted by Pod <uid> on node <node>", the stock executor's message,
// which TopoPreempt's evictions share).
func evictedTwice(ctx context.Context, client kubernetes.Interface, ns string) (int, error) {
	events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Preempted"})
	if err != nil {
		return 0, err
	}
	by := map[string]map[string]bool{}
	for _, ev := range events.Items {
		if ev.InvolvedObject.Kind != "Pod" || !strings.HasPrefix(ev.Message, "Preempted by ") {
			continue
		}
		// "Preempted by Pod <uid> on node <node>": the preemptor is the text before " on node".
		preemptor, _, _ := strings.Cut(strings.TrimPrefix(ev.Message, "Preempted by "), " on node")
		if by[ev.InvolvedObject.Name] == nil {
			by[ev.InvolvedObject.Name] = map[string]bool{}
		}
		by[ev.InvolvedObject.Name][preemptor] = true
	}
	twice := 0
	for _, preemptors := range by {
		if len(preemptors) > 1 {
			twice++
		}
	}
	return twice, nil
}
